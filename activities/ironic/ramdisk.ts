/**
 * A missing agent ramdisk, named. Automated cleaning and most deploys boot
 * Ironic's agent (IPA) from `deploy_kernel`/`deploy_ramdisk` (the node's
 * driver_info, else the conductor's defaults). Without them Ironic fails the
 * clean, or refuses the deploy, with one driver's validation message among
 * others. When such an operation fails, the node's own validation
 * (`GET …/validate`) tells whether that is why; the failure then says so in
 * words an operator can act on. Only on failure: a working host pays nothing.
 */
import { ApplicationFailure } from '@temporalio/activity';
import { FAILURE } from '../../model/failures';
import { IronicError, type IronicClient } from '../../clients/ironic/client';
import { operationFailed } from './node-driver';

const RAMDISK = /deploy_kernel|deploy_ramdisk/;

/** What needed the agent: Ironic's clean (a `clean failed` node) or the deploy. */
type Phase = 'cleaning' | 'deploying';

export function ramdiskMessage(nodeId: string, phase: Phase, reason: string): string {
  const avoid = phase === 'cleaning' ? '; or skip automated cleaning with spec.automatedCleaningMode: disabled' : '';
  return (
    `${phase} needs the agent ramdisk and none is configured for Ironic node ${nodeId}: ` +
    `set deploy_kernel and deploy_ramdisk (Ironic's [conductor] defaults or the node's driver_info)${avoid} (Ironic: ${reason})`
  );
}

/** A failure that ends the operation (not a transient one): worth asking Ironic why. */
const final = (err: unknown): boolean =>
  (err instanceof IronicError && err.kind === 'rejected') ||
  (err instanceof ApplicationFailure && (err.type === FAILURE.operationFailed || err.type === FAILURE.ironicRejected));

export function createRamdiskCheck(ironic: IronicClient) {
  /** The boot or deploy interface's complaint about the ramdisk, if it has one. */
  async function missingRamdisk(nodeId: string): Promise<string | undefined> {
    const results = await ironic.validateNode(nodeId).catch(() => undefined);
    for (const iface of ['deploy', 'boot']) {
      const r = results?.[iface];
      if (r?.result === false && r.reason && RAMDISK.test(r.reason)) return r.reason;
    }
    return undefined;
  }

  /** Runs `fn`; a failure of a node whose agent ramdisk is missing becomes one that says so. */
  async function namingRamdisk<T>(nodeId: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (!final(err)) throw err;
      const reason = await missingRamdisk(nodeId);
      if (!reason) throw err;
      const state = (await ironic.getNodeState(nodeId, ['provision_state']).catch(() => undefined))?.provision_state;
      throw operationFailed(ramdiskMessage(nodeId, state === 'clean failed' ? 'cleaning' : 'deploying', reason));
    }
  }

  return { namingRamdisk };
}
