/**
 * A pivot's I/O, one activity per step (workflows/pivot/host.ts decides).
 * The clusters are read and written through their kubeconfigs
 * (activities/pivot/planes.ts); the source host workflow is watched through
 * Temporal (idle once frozen, detached once handed over). Every activity is
 * idempotent: a retry, a restarted worker or a new run finds what it did.
 */
import { Context } from '@temporalio/activity';
import { Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { HostRef } from '../../model/host';
import type { Plane, PivotSelector } from '../../model/pivot';
import type { RegisteredPlane } from '../../config/pivot-planes';
import type { SecretReader } from '../../clients/secrets/secret-store';
import { hostWorkflowId } from '../../model/host-ref';
import { bmhObjectPath, deleteObject, getObject, patchMetadata } from '../../clients/kubernetes/metal3-objects';
import { hostRun, idleHostView } from '../../control/host-run';
import { hostViewQuery, recordMoveUpdate, type HostView } from '../../contracts/host';
import type { FleetSelection } from '../../contracts/fleet';
import type { PivotExpect, PivotManifest, PrecheckResult } from '../../contracts/pivot';
import { heartbeat, pause } from '../common/activity-context';
import { planeRest, refused, resolvePlane, type PivotPlaneDeps } from './planes';
import { targetPlaneProblem } from './target-check';
import { exportHost, selectBareMetalHosts, sourceProblem, targetProblem, METAL3_ANNOTATIONS, type BareMetalHostObject } from './export';
import { freeze, importHost, rollBackHost, unfreeze } from './import';
import * as viaApi from './api-planes';

export interface PivotHostCall {
  pivot: string;
  ref: HostRef;
  source: Plane;
  target: Plane;
}

/** Metal3's detach arguments: the node goes as it is (no deprovisioning, no power change). */
const DETACH_AS_IS = JSON.stringify({ deleteAction: 'delete' });

export function createPivotActivities(deps: PivotPlaneDeps & { client?: Client; secrets?: SecretReader; credentialSites?: readonly string[] } = {}) {
  /** Sites holding their hosts' BMC credentials themselves: a pivot neither reads nor copies those (docs/sites.md). */
  const credentialSites = deps.credentialSites ?? [];
  const ownClient = (): Client => deps.client ?? Context.current().client;
  /** The plane's host workflows: the worker's own namespace unless the registered plane names another. */
  const hostClient = (input: Plane, side: 'source' | 'target'): Client => {
    const plane = resolvePlane(deps, input, side);
    const own = ownClient();
    if (!plane.temporalNamespace || plane.temporalNamespace === own.options.namespace) return own;
    return new Client({ connection: own.connection, namespace: plane.temporalNamespace, dataConverter: own.options.dataConverter });
  };
  const source = (c: PivotHostCall) => planeRest(deps, c.source, 'source');
  const target = (c: PivotHostCall) => planeRest(deps, c.target, 'target');
  /** API-mode planes (both are, or neither): their clients, the tokens read now. */
  const apis = async (c: PivotHostCall) => ({ src: await viaApi.apiPlane(deps, resolvePlane(deps, c.source, 'source'), 'source'), dst: await viaApi.apiPlane(deps, resolvePlane(deps, c.target, 'target'), 'target') });
  /** Whether the plane is a metalflow API (else a Kubernetes API server), as the operator registered it. */
  const isApiPlane = (plane: Plane, side: 'source' | 'target'): boolean => resolvePlane(deps, plane, side).api !== undefined;
  /** Whether a host call's planes are API planes; one of each kind is refused before anything is read. */
  const apiMode = (c: { source: Plane; target?: Plane }): boolean => {
    const src = isApiPlane(c.source, 'source');
    if (c.target && isApiPlane(c.target, 'target') !== src) throw refused('target.plane', 'source and target must both be metalflow API planes or both Kubernetes planes');
    return src;
  };

  /**
   * Watches the source host until `done` says so of its view (both waits need no operation running),
   * heartbeating what it saw; the view it ended on. Described at each poll, queried only when that
   * could answer (idleHostView): a frozen host runs local activities, and a query that meets one is
   * the replay fault of docs/adr/0006-local-activity-heartbeat.md.
   */
  async function watchHost(plane: Plane, ref: HostRef, done: (v: HostView) => boolean, what: string): Promise<HostView> {
    const c = hostClient(plane, 'source');
    let delay = 300;
    let seen: string | undefined;
    for (;;) {
      const look = await idleHostView(c, ref, seen);
      if (look.run.kind !== 'running') throw new Error(`the source host's workflow is ${look.run.kind} while waiting until ${what}`);
      if (look.view) {
        seen = look.mark;
        if (done(look.view)) return look.view;
      }
      heartbeat({ waiting: what, operation: look.view?.currentOperation?.kind ?? (look.operation || undefined) });
      await pause(delay);
      delay = Math.min(delay * 1.5, 3000);
    }
  }

  /** What still differs in a Kubernetes target: the object, then the target's host workflow (the restored status shows the source's at once). */
  async function kubeTargetLook(call: PivotHostCall & { expect: PivotExpect }): Promise<() => Promise<string | undefined>> {
    const rest = await target(call);
    const atRest = targetAtRest(hostClient(call.target, 'target'), call.ref, call.expect);
    return async () => targetMismatch(await getObject<BareMetalHostObject>(rest, bmhObjectPath(call.ref.namespace, call.ref.name)), call.expect) ?? (await atRest());
  }

  /** The same through an API target's view of the host. */
  async function apiTargetLook(call: PivotHostCall & { expect: PivotExpect }): Promise<() => Promise<string | undefined>> {
    const { dst } = await apis(call);
    return async () => {
      const view = await viaApi.apiHost(dst, call.ref, 'target');
      const obj: BareMetalHostObject | undefined = view && {
        metadata: { name: call.ref.name, namespace: call.ref.namespace, ...(view.paused ? { annotations: { [METAL3_ANNOTATIONS.paused]: view.paused.reason } } : {}) },
        spec: (view.spec ?? {}) as Record<string, unknown>,
        status: view.status,
      };
      const differs = targetMismatch(obj, call.expect);
      if (differs || !view) return differs;
      const id = view.status.provisioning.ID;
      if (!id || id === call.expect.sourceNodeId) return 'the target host has not registered its own Ironic node yet';
      if (view.currentOperation) return `the target host is running ${view.currentOperation.kind}`;
      return undefined;
    };
  }

  return {
    async selectPivotHosts(input: { source: Plane; selector: PivotSelector }): Promise<FleetSelection> {
      if (apiMode(input)) return viaApi.apiSelect(await viaApi.apiPlane(deps, resolvePlane(deps, input.source, 'source'), 'source'), input.selector);
      return selectBareMetalHosts(await planeRest(deps, input.source, 'source'), input.selector);
    },

    /** Whether the host may move now: a reason to skip it, or ok. Changes nothing. */
    async precheckPivotHost(call: PivotHostCall): Promise<PrecheckResult> {
      const problem = apiMode(call)
        ? await (async () => {
            const { src, dst } = await apis(call);
            return (await viaApi.apiSourceProblem(src, deps.secrets, call.ref, call.pivot, credentialSites)) ?? (await viaApi.apiTargetProblem(dst, call.ref));
          })()
        : (await sourceProblem(await source(call), call.ref, call.pivot, credentialSites)) ?? (await targetProblem(await target(call), call.ref, call.pivot));
      if (problem) return { skip: problem };
      const { taskQueue } = resolvePlane(deps, call.target, 'target');
      if (taskQueue) {
        const reason = await targetPlaneProblem(hostClient(call.target, 'target'), taskQueue, call.pivot);
        if (reason) return { skip: reason };
      }
      return { ok: true };
    },

    /** Pauses the source host with the pivot's value and waits until its workflow is idle (paused, nothing running) and its status published. */
    async freezePivotHost(call: PivotHostCall): Promise<void> {
      if (apiMode(call)) return viaApi.apiFreeze((await apis(call)).src, call.ref, call.pivot);
      const rest = await source(call);
      await freeze(rest, call.ref, call.pivot);
      const view = await watchHost(call.source, call.ref, (v) => v.paused !== undefined && !v.currentOperation, 'the host is paused and idle');
      // The status goes to the API server in the background: wait until the object shows the idle host's.
      for (let delay = 300; ; delay = Math.min(delay * 1.5, 3000)) {
        const obj = await getObject<BareMetalHostObject>(rest, bmhObjectPath(call.ref.namespace, call.ref.name));
        const p = obj?.status?.provisioning;
        if (p?.state === view.status.provisioning.state && obj?.status?.poweredOn === view.status.poweredOn) return;
        heartbeat({ waiting: 'the status to be published' });
        await pause(delay);
      }
    },

    async exportPivotHost(call: PivotHostCall): Promise<PivotManifest> {
      if (apiMode(call)) return viaApi.apiExport((await apis(call)).src, call.ref, credentialSites);
      return exportHost(await source(call), call.ref, credentialSites);
    },

    /** Secrets, host (paused, with the status annotation), HardwareData: created in the target, Secret data read and written here only. */
    async importPivotHost(call: PivotHostCall & { manifest: PivotManifest }): Promise<void> {
      if (apiMode(call)) {
        // Nothing is created in an API target before hand-over: its name must still be free.
        const taken = await viaApi.apiTargetProblem((await apis(call)).dst, call.ref);
        if (taken) throw ApplicationFailure.create({ type: 'PivotTargetTaken', nonRetryable: true, message: taken });
        return;
      }
      await importHost(await source(call), await target(call), call.pivot, call.manifest);
    },

    async rollbackPivotHost(call: PivotHostCall): Promise<void> {
      if (apiMode(call)) return viaApi.apiUnfreeze((await apis(call)).src, call.ref, call.pivot);
      await rollBackHost(await source(call), await target(call), call.pivot, call.ref);
    },

    /**
     * The source lets go: the pivot's pause gives way to Metal3's detached annotation, so the
     * source host workflow deletes its Ironic node as it is (no deprovisioning, no power change).
     * Waits until the host reports itself detached.
     */
    async detachPivotSource(call: PivotHostCall): Promise<void> {
      if (apiMode(call)) return viaApi.apiDetach((await apis(call)).src, call.ref, call.pivot);
      const rest = await source(call);
      const obj = await getObject<BareMetalHostObject>(rest, bmhObjectPath(call.ref.namespace, call.ref.name));
      if (!obj) throw new Error(`BareMetalHost ${call.ref.namespace}/${call.ref.name} is gone from the source before it was detached`);
      if (obj.metadata.annotations?.[METAL3_ANNOTATIONS.detached] === undefined) {
        await unfreeze(rest, call.ref, call.pivot, { [METAL3_ANNOTATIONS.detached]: DETACH_AS_IS });
      } else {
        await unfreeze(rest, call.ref, call.pivot);
      }
      await watchHost(call.source, call.ref, (v) => v.status.operationalStatus === 'detached' && !v.currentOperation, 'the source host is detached');
    },

    /** The target may act: its pause goes, and its controller restores the status annotation and adopts. */
    async releasePivotTarget(call: PivotHostCall & { manifest?: PivotManifest; expect?: PivotExpect }): Promise<void> {
      if (apiMode(call)) {
        const { src, dst } = await apis(call);
        let manifest: Pick<PivotManifest, 'labels' | 'spec' | 'statusAnnotation'> | undefined = call.manifest;
        if (!manifest) {
          // A new run past the export: the detached source still has the spec; its status as before the detach.
          const view = await viaApi.apiHost(src, call.ref, 'source');
          if (!view) throw new Error(`${call.ref.namespace}/${call.ref.name} is gone from the source before the target created it`);
          manifest = { labels: view.labels ?? {}, spec: (view.spec ?? {}) as Record<string, unknown>, statusAnnotation: viaApi.statusBeforeDetach(view, call.expect) };
        }
        return viaApi.apiCreateInTarget(src, dst, deps.secrets, call.ref, manifest, credentialSites);
      }
      await unfreeze(await target(call), call.ref, call.pivot);
    },

    /** Watches the target host until it shows what the source showed, or `windowMs` has passed. */
    async awaitPivotTarget(call: PivotHostCall & { expect: PivotExpect; windowMs: number }): Promise<{ matched: true } | { waiting: string }> {
      const until = Date.now() + call.windowMs;
      const look = apiMode(call) ? await apiTargetLook(call) : await kubeTargetLook(call);
      for (let delay = 300; ; delay = Math.min(delay * 1.5, 3000)) {
        const seen = await look();
        if (!seen) return { matched: true };
        if (Date.now() + delay > until) return { waiting: seen };
        heartbeat({ waiting: seen });
        await pause(delay);
      }
    },

    /** The source object deleted; detached, the source host workflow removes it without deprovisioning or power change. Waits until it is gone. */
    async removePivotSource(call: PivotHostCall): Promise<void> {
      if (apiMode(call)) {
        const { src } = await apis(call);
        // The source host workflow is this worker's (the pivot runs on the source plane): its last record says where the host went.
        if (await viaApi.apiHost(src, call.ref, 'source')) await recordMove(hostClient(call.source, 'source'), call, resolvePlane(deps, call.target, 'target'));
        return viaApi.apiRemoveSource(src, call.ref);
      }
      const rest = await source(call);
      const path = bmhObjectPath(call.ref.namespace, call.ref.name);
      const obj = await getObject<BareMetalHostObject>(rest, path);
      if (obj && obj.metadata.annotations?.[METAL3_ANNOTATIONS.detached] === undefined) {
        // Never delete a host that is not detached: its delete would deprovision it.
        await patchMetadata(rest, path, { annotations: { [METAL3_ANNOTATIONS.detached]: DETACH_AS_IS } });
      }
      if (obj) {
        await recordMove(hostClient(call.source, 'source'), call, resolvePlane(deps, call.target, 'target'));
        await deleteObject(rest, path);
      }
      for (let delay = 300; ; delay = Math.min(delay * 1.5, 3000)) {
        if (!(await getObject(rest, path))) return;
        heartbeat({ waiting: 'the source object to go' });
        await pause(delay);
      }
    },
  };
}

/** The source host workflow's last record says where the host went (once per pivot; a run already gone has nothing to record). */
async function recordMove(c: Client, call: PivotHostCall, plane: RegisteredPlane): Promise<void> {
  if ((await hostRun(c, call.ref)).kind !== 'running') return;
  const handle = c.workflow.getHandle(hostWorkflowId(call.ref));
  if ((await handle.query(hostViewQuery)).movedTo?.pivot === call.pivot) return;
  const { id, taskQueue, temporalNamespace, kubeconfig, kubeconfigSecret, api } = plane;
  const target = {
    ...(id ? { plane: id } : {}),
    ...(api ? { api: { url: api.url } } : {}),
    ...(taskQueue ? { taskQueue } : {}),
    ...(temporalNamespace ? { temporalNamespace } : {}),
    ...(kubeconfig ? { kubeconfig } : {}),
    ...(kubeconfigSecret ? { kubeconfigSecret: { namespace: kubeconfigSecret.namespace, name: kubeconfigSecret.name } } : {}),
  };
  await handle.executeUpdate(recordMoveUpdate, { args: [{ pivot: call.pivot, at: new Date().toISOString(), target }] });
}

/**
 * A look at the target's host workflow: undefined once it has its own Ironic node and runs nothing;
 * else what it is still doing. The target host is adopting, its local activities running: it is
 * queried only when that could answer (idleHostView, docs/adr/0006-local-activity-heartbeat.md),
 * and a history that has not moved keeps the last answer.
 */
function targetAtRest(c: Client, ref: HostRef, expect: PivotExpect): () => Promise<string | undefined> {
  let seen: { mark: string; said: string } | undefined;
  return async () => {
    const look = await idleHostView(c, ref, seen?.mark);
    if (look.run.kind !== 'running') return "the target host's workflow is not running yet";
    if (look.operation) return `the target host is running ${look.operation}`;
    if (!look.view) return seen!.said;
    const id = look.view.status.provisioning.ID;
    const said =
      !id || id === expect.sourceNodeId
        ? 'the target host has not registered its own Ironic node yet'
        : look.view.currentOperation
          ? `the target host is running ${look.view.currentOperation.kind}`
          : undefined;
    seen = said === undefined ? undefined : { mark: look.mark, said };
    return said;
  };
}

/** What still differs between the target host and the source's export; undefined once they agree. */
export function targetMismatch(obj: BareMetalHostObject | undefined, expect: PivotExpect): string | undefined {
  if (!obj) return 'the target host does not exist';
  const st = obj.status;
  if (obj.metadata.annotations?.[METAL3_ANNOTATIONS.paused] !== undefined) return 'the target host is paused';
  if (st?.provisioning?.state !== expect.provisioningState) return `the target host is ${st?.provisioning?.state || 'not registered'}, not ${expect.provisioningState}`;
  if (st.operationalStatus !== 'OK') return `the target host's operationalStatus is ${st.operationalStatus}`;
  if ((st.provisioning.image?.url ?? undefined) !== expect.image) return `the target host's image is ${st.provisioning.image?.url ?? 'none'}, not ${expect.image ?? 'none'}`;
  // As the source was, or as the spec asks: a source frozen before it had corrected its power
  // (e.g. just registered, still off) is corrected by the target instead.
  const online = (obj.spec as { online?: boolean } | undefined)?.online ?? true;
  if (st.poweredOn !== expect.poweredOn && st.poweredOn !== online) {
    return `the target host is powered ${st.poweredOn ? 'on' : 'off'}; the source was ${expect.poweredOn ? 'on' : 'off'} and the spec asks ${online ? 'on' : 'off'}`;
  }
  const ref = (obj.spec?.consumerRef ?? undefined) as PivotExpect['consumerRef'];
  if (JSON.stringify(ref ?? null) !== JSON.stringify(expect.consumerRef ?? null)) return "the target host's consumerRef differs";
  return undefined;
}
