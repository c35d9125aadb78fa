/**
 * A remediation's dealings with its host, all through the host workflow (the
 * single owner of the host's power): the keyed power-off request and its
 * release (Kubernetes mode: the BareMetalHost's `reboot.metal3.io/<key>`
 * annotation, which the controller hands to the workflow; API mode: the host
 * workflow's own update), and watching the host's view until its power is
 * what the step waits for. Every call is idempotent.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { WorkflowNotFoundError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import type { HostRef } from '../../model/host';
import { hostWorkflowId } from '../../model/host-ref';
import { idleHostView } from '../../control/host-run';
import { REMEDIATION_FAILURE as FAILURE } from '../../model/remediation';
import { hostViewQuery, powerRequestsUpdate, type HostView } from '../../contracts/host';
import type { PowerRequestChange } from '../../contracts/power-requests';
import { REMEDIATION_ANNOTATIONS } from '../../contracts/remediation';
import { annotateHost } from '../../clients/kubernetes/nodes';
import type { KubeRest } from '../../clients/kubernetes/kube-rest';
import { heartbeat, pause } from '../common/activity-context';

export interface PowerOffCall {
  ref: HostRef;
  key: string;
  kubernetes: boolean;
}

export interface RemediationHost {
  found: boolean;
  online?: boolean;
  poweredOn?: boolean;
  uid?: string;
  disablePowerOff?: boolean;
}

const POLL_MS = 1000;

export function createRemediationHostActivities(deps: { client?: Client; rest?: KubeRest } = {}) {
  const client = (): Client => deps.client ?? Context.current().client;
  const rest = (): KubeRest => {
    if (!deps.rest) throw ApplicationFailure.nonRetryable('this worker has no Kubernetes API server (METALFLOW_KUBECONFIG)', FAILURE.noKubernetes);
    return deps.rest;
  };
  const view = async (ref: HostRef): Promise<HostView | undefined> => {
    try {
      return await client().workflow.getHandle(hostWorkflowId(ref)).query(hostViewQuery);
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return undefined;
      throw err;
    }
  };
  /**
   * For the power waits, which need no operation running: the view only when that could answer
   * (idleHostView: no operation named, the history moved since `seen`), as the host powers off or
   * reboots with its local activities running (docs/adr/0006-local-activity-heartbeat.md). A run that
   * ended is read as before (a closed run still answers); none at all is a host gone.
   */
  const idleLook = async (ref: HostRef, seen: string | undefined): Promise<{ mark?: string; operation: string; view?: HostView }> => {
    const look = await idleHostView(client(), ref, seen);
    if (look.run.kind === 'running') return look.view ? look : { mark: seen, operation: look.operation };
    const v = await view(ref);
    if (v === undefined) throw ApplicationFailure.nonRetryable(`host ${ref.namespace}/${ref.name} is gone`, FAILURE.hostGone);
    return { operation: '', view: v };
  };
  const update = async (ref: HostRef, change: PowerRequestChange): Promise<void> => {
    try {
      await client().workflow.getHandle(hostWorkflowId(ref)).executeUpdate(powerRequestsUpdate, { args: [change] });
    } catch (err) {
      if (err instanceof WorkflowUpdateFailedError) {
        throw ApplicationFailure.nonRetryable(`the host refused the power-off request: ${err.cause?.message ?? err.message}`, FAILURE.powerRefused);
      }
      throw err;
    }
  };

  return {
    /** What the remediation must know of the host before it starts. */
    async readRemediationHost(ref: HostRef): Promise<RemediationHost> {
      const v = await view(ref);
      if (!v?.spec) return { found: false };
      return { found: true, online: v.spec.online, poweredOn: v.status.poweredOn, uid: v.uid, disablePowerOff: v.spec.disablePowerOff === true };
    },

    /** Asks the host to power off hard and stay off until the key is released. */
    async holdHostOff(call: PowerOffCall): Promise<void> {
      if (call.kubernetes) {
        const present = await annotateHost(rest(), call.ref, { [`reboot.metal3.io/${call.key}`]: '{"mode":"hard"}' });
        if (!present) throw ApplicationFailure.nonRetryable(`BareMetalHost ${call.ref.namespace}/${call.ref.name} is gone`, FAILURE.hostGone);
        return;
      }
      await update(call.ref, { holdOff: { [call.key]: 'hard' } });
    },

    /** Releases the key; the host powers on once no other key holds it (and spec.online). A host gone is released. */
    async releaseHostOff(call: PowerOffCall): Promise<void> {
      if (call.kubernetes) {
        await annotateHost(rest(), call.ref, { [`reboot.metal3.io/${call.key}`]: null });
        return;
      }
      if ((await view(call.ref)) === undefined) return;
      await update(call.ref, { release: [call.key] });
    },

    /**
     * Waits until the host reports its power `on` (powered off: only once the host
     * workflow holds `key`, so an old "off" is not taken for this request's), or until
     * `deadline` passes: `reached` says which.
     */
    async awaitHostPower(call: { ref: HostRef; on: boolean; key?: string; deadline: string }): Promise<{ reached: boolean }> {
      const end = Date.parse(call.deadline);
      let seen: string | undefined;
      for (;;) {
        const look = await idleLook(call.ref, seen);
        seen = look.mark;
        const v = look.view;
        const held = v && (call.key === undefined || v.power.holds[call.key] !== undefined);
        if (v && v.status.poweredOn === call.on && held && !v.currentOperation) return { reached: true };
        if (Date.now() >= end) return { reached: false };
        heartbeat(v ? { poweredOn: v.status.poweredOn, held } : { operation: look.operation });
        await pause(POLL_MS);
      }
    },

    /**
     * A host with spec.disablePowerOff is rebooted by a keyed request, never held off (as
     * Metal3 does): waits until the host workflow holds `key` and its one-shot reboot has
     * run (nothing pending, no operation running), or until `deadline`.
     */
    async awaitHostRebooted(call: { ref: HostRef; key: string; deadline: string }): Promise<{ reached: boolean }> {
      const end = Date.parse(call.deadline);
      let seen: string | undefined;
      for (;;) {
        const look = await idleLook(call.ref, seen);
        seen = look.mark;
        const v = look.view;
        const held = v?.power.holds[call.key] !== undefined;
        if (v && held && !v.power.reboot && !v.currentOperation) return { reached: true };
        if (Date.now() >= end) return { reached: false };
        heartbeat(v ? { held, rebootPending: v.power.reboot !== undefined } : { operation: look.operation });
        await pause(POLL_MS);
      }
    },

    /** Gives up on the host as CAPM3 does: `capm3.metal3.io/unhealthy` (Kubernetes mode; API mode shows it on the remediation). */
    async markHostUnhealthy(call: { ref: HostRef; kubernetes: boolean }): Promise<void> {
      if (call.kubernetes) await annotateHost(rest(), call.ref, { [REMEDIATION_ANNOTATIONS.unhealthy]: '' });
    },
  };
}
