/**
 * A remediation's steps beyond Metal3's reboots, all through the host
 * workflow (or, in Kubernetes mode, the host's BareMetalHost), never Ironic:
 * re-provision the image the host runs (deprovision, then provision it
 * again; userData stays in the spec), and re-inspect it. The changes and the
 * waits are the fleet operations' own (activities/fleet/activities.ts), so a
 * remediation asks a host exactly what a `deprovision`, `provision` or
 * `reinspect` fleet would, and reads its result the same way. Idempotent:
 * a change already asked for or already reached is not asked again.
 */
import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { hostRun } from '../../control/host-run';
import { hostWorkflowId } from '../../model/host-ref';
import { hostViewQuery } from '../../contracts/host';
import type { KubeRest } from '../../clients/kubernetes/kube-rest';
import type { FleetOperation } from '../../model/fleet';
import type { HardwareDetails, HostRef, Image } from '../../model/host';
import type { FleetHostResult } from '../../contracts/fleet-goals';
import { createFleetActivities } from '../fleet/activities';
import { heartbeat } from '../common/activity-context';

/** What a remediation may ask of its host beyond power: the fleet operations of that name. */
export type RemediationHostChange = { kind: 'deprovision' } | { kind: 'provision'; image: Image } | { kind: 'reinspect' };

export interface RemediationChangeCall {
  ref: HostRef;
  change: RemediationHostChange;
  /** When the step started: only the host's operations from then on count. */
  since: string;
}

/** What the host runs and what its last inspection found, before a step changes either. */
export interface HostImageAndHardware {
  /** The image it runs (status), else the one asked for (spec); none: nothing to re-provision. */
  image?: Image;
  hardware?: HardwareDetails;
  state: string;
}

/** The activities' own name for the fleet calls (only powerOff/powerOn use it, which a remediation never asks). */
const CALLER = 'remediation';
const WINDOW_MS = 20_000;

export function createRemediationReprovisionActivities(deps: { client?: Client; rest?: KubeRest } = {}) {
  const fleet = createFleetActivities(deps);
  const call = (c: RemediationChangeCall) => ({ ref: c.ref, operation: c.change as FleetOperation, fleet: CALLER, since: c.since });

  return {
    async readHostImageAndHardware(ref: HostRef): Promise<HostImageAndHardware> {
      const c = deps.client ?? Context.current().client;
      const found = await hostRun(c, ref);
      if (found.kind !== 'running') return { state: found.kind };
      const v = await c.workflow.getHandle(hostWorkflowId(ref)).query(hostViewQuery);
      const image = v.status.provisioning.image ?? v.spec?.image;
      return { state: v.status.provisioning.state || 'unmanaged', ...(image ? { image } : {}), ...(v.status.hardware ? { hardware: v.status.hardware } : {}) };
    },

    /** Hands the host the change (once: a retry finds it asked for or done); a result when it cannot take it or has it already. */
    async changeHostForRemediation(c: RemediationChangeCall): Promise<FleetHostResult | undefined> {
      const started = await fleet.startFleetChange(call(c));
      return 'result' in started ? started.result : undefined;
    },

    /** Waits, heartbeating, until the host reached the change's goal, failed it or cannot go on, or until `deadline`. */
    async awaitHostForRemediation(c: RemediationChangeCall & { deadline: string }): Promise<FleetHostResult | { outcome: 'timedOut'; state: string }> {
      const end = Date.parse(c.deadline);
      let state = '';
      for (;;) {
        const left = end - Date.now();
        if (left <= 0) return { outcome: 'timedOut', state };
        const seen = await fleet.awaitFleetHost({ ...call(c), windowMs: Math.min(left, WINDOW_MS) });
        if ('result' in seen) return seen.result;
        state = seen.waiting;
        heartbeat({ state });
      }
    },
  };
}
