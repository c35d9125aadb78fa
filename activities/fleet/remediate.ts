/**
 * The fleet operation `remediate`: one remediation per host, with the
 * fleet's strategy, started where that host's remediations start. An API
 * host gets its own `remediateWorkflow` (as `POST …/remediations` starts
 * one); a host driven by a BareMetalHost gets a HostRemediation object, which
 * the controller starts (one at a time per host, queued behind another).
 * The remediation's id is derived from the fleet, the host and when the
 * fleet started it, so a retried call finds the one it started. The host
 * succeeded when its remediation succeeded; anything else that ends it
 * (failed, refused, cancelled) fails the host with the remediation's message.
 */
import { createHash } from 'node:crypto';
import { Context } from '@temporalio/activity';
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { KubeRest } from '../../clients/kubernetes/kube-rest';
import { createHostRemediation, hostRemediationsPath } from '../../clients/kubernetes/host-remediations';
import { getObject } from '../../clients/kubernetes/metal3-objects';
import type { FleetOperation } from '../../model/fleet';
import type { HostRef } from '../../model/host';
import type { HostRemediationStatus } from '../../model/host-remediation';
import type { FleetHostResult } from '../../contracts/fleet-goals';
import { remediationQuery, remediationWorkflowId, type RemediationInput, type RemediationView } from '../../contracts/remediation';

type Remediate = Extract<FleetOperation, { kind: 'remediate' }>;
export interface FleetRemediationCall {
  ref: HostRef;
  operation: Remediate;
  fleet: string;
  since: string;
}

/** A uuid-shaped id of (fleet, host, start): its power-off key `metal3-remediation-<uid>` stays a 55-character annotation name, as CAPM3's. */
export function fleetRemediationUid(call: Pick<FleetRemediationCall, 'ref' | 'fleet' | 'since'>): string {
  const h = createHash('sha256').update(`${call.fleet}\n${call.ref.namespace}/${call.ref.name}\n${call.since}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

/** The HostRemediation's name: the fleet's and a short digest of the host (names may be long). */
export const fleetHostRemediationName = (call: Pick<FleetRemediationCall, 'ref' | 'fleet' | 'since'>): string => `fleet-${call.fleet}-${fleetRemediationUid(call).slice(0, 8)}`;

function ended(outcome: string | undefined, message: string | undefined): FleetHostResult | undefined {
  if (outcome === 'succeeded') return { outcome: 'succeeded', ...(message ? { note: message } : {}) };
  if (outcome === 'failed' || outcome === 'refused' || outcome === 'cancelled') return { outcome: 'failed', error: `remediation ${outcome}: ${message ?? 'no message'}` };
  return undefined;
}

export function createFleetRemediation(deps: { client?: Client; rest?: KubeRest }) {
  const client = (): Client => deps.client ?? Context.current().client;

  return {
    /** Starts the host's remediation (once). */
    async start(call: FleetRemediationCall, viaObject: KubeRest | undefined): Promise<void> {
      const { strategy, nodeHandling } = call.operation;
      if (viaObject) {
        await createHostRemediation(viaObject, call.ref.namespace, {
          metadata: { name: fleetHostRemediationName(call), namespace: call.ref.namespace, labels: { 'app.kubernetes.io/created-by': 'metalflow-fleet', 'metalflow.io/fleet': call.fleet } },
          spec: { hostName: call.ref.name, strategy, ...(nodeHandling ? { nodeHandling } : {}) },
        });
        return;
      }
      const uid = fleetRemediationUid(call);
      // API mode has no Node: the power cycle only (nodeHandling is for BareMetalHosts).
      const input: RemediationInput = { ref: call.ref, uid, request: { strategy }, kubernetes: false };
      try {
        await client().workflow.start('remediateWorkflow', { taskQueue: Context.current().info.taskQueue, workflowId: remediationWorkflowId(call.ref, uid), args: [input] });
      } catch (err) {
        if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      }
    },

    /** How the host's remediation ended, or undefined while it runs (or is queued). */
    async result(call: FleetRemediationCall, viaObject: KubeRest | undefined): Promise<FleetHostResult | undefined> {
      if (viaObject) {
        const obj = await getObject<{ status?: HostRemediationStatus }>(viaObject, `${hostRemediationsPath(call.ref.namespace)}/${fleetHostRemediationName(call)}`);
        if (!obj) return { outcome: 'failed', error: `HostRemediation ${fleetHostRemediationName(call)} is gone (deleted)` };
        return ended(obj.status?.outcome, obj.status?.message);
      }
      const handle = client().workflow.getHandle(remediationWorkflowId(call.ref, fleetRemediationUid(call)));
      try {
        const d = await handle.describe();
        if (d.status.name === 'RUNNING') return undefined;
        if (d.status.name !== 'COMPLETED') return { outcome: 'failed', error: `remediation ${d.status.name.toLowerCase()}${await failureOf(handle)}` };
        const view = (await handle.result()) as RemediationView;
        return ended(view.outcome, view.message);
      } catch (err) {
        if (err instanceof WorkflowNotFoundError) return { outcome: 'failed', error: 'its remediation was never started (not found)' };
        throw err;
      }
    },
  };
}

async function failureOf(handle: ReturnType<Client['workflow']['getHandle']>): Promise<string> {
  try {
    const v = await handle.query(remediationQuery);
    return v.message ? `: ${v.message}` : '';
  } catch {
    return '';
  }
}
