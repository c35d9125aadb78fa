/**
 * A worker's answer about its own plane, asked by a pivot before it moves a
 * host to that plane (workflows/pivot/plane-check.ts runs on the plane's task queue,
 * so the answer comes from the worker that will adopt the host, about the
 * Ironic it will use, with its own address and credentials).
 */
import { ApplicationFailure } from '@temporalio/common';
import { IronicError, type IronicClient } from '../../clients/ironic/client';
import type { PlaneReport } from '../../contracts/pivot';

export function createPlaneCheckActivities(deps: { ironic: IronicClient }) {
  return {
    async checkOwnPlane(): Promise<PlaneReport> {
      try {
        const apiVersion = await deps.ironic.serverVersion();
        const drivers = await deps.ironic.listDrivers();
        const conductors = [...new Set(drivers.flatMap((d) => d.hosts))].sort();
        return { ironic: { apiVersion, conductors, hardwareTypes: drivers.map((d) => d.name).sort() } };
      } catch (err) {
        if (!(err instanceof IronicError)) throw err;
        // Said at once: the pivot skips the host with this reason rather than waiting on retries.
        throw ApplicationFailure.create({ type: 'IronicUnreachable', nonRetryable: true, message: `Ironic at ${deps.ironic.where}: ${err.message}` });
      }
    },
  };
}

export type PlaneCheckActivities = ReturnType<typeof createPlaneCheckActivities>;
