/**
 * The reboot and power-off annotations of a BareMetalHost (`reboot.metal3.io`
 * and `reboot.metal3.io/<key>`) handed to its workflow as power requests.
 * Level-triggered: the full set goes each time it changes, so a lost update is
 * repaired by the next reconcile. As Metal3 does, the one-shot
 * `reboot.metal3.io` is removed once the workflow says its reboot has run, so
 * it is served exactly once.
 */
import type { Client } from '@temporalio/client';
import type { KubeRest } from '../../clients/kubernetes/kube-rest';
import { MERGE } from '../../clients/kubernetes/metal3-objects';
import type { HostRef } from '../../model/host';
import { hostWorkflowId } from '../../model/host-ref';
import { markedHostRun } from '../../control/host-run';
import { hostViewQuery, powerRequestsUpdate } from '../../contracts/host';
import type { PowerRequestChange, PowerRequestsView } from '../../contracts/power-requests';
import { ANNOTATIONS, type HostAnnotations } from './annotations';
import type { BareMetalHost } from './bare-metal-host';

export interface PowerAnnotationDeps {
  rest: KubeRest;
  client: Client;
  requeueAfter: (key: string, ms: number) => void;
  log?: (message: string) => void;
}

/**
 * `applied`: the requests last handed to each workflow (the reconciler's; losing it only costs a
 * repeat update). `looked`: the host's history mark when its one-shot's progress was last read
 * (same caveat). `objectPath`: the host object's API path.
 */
export async function syncPowerRequests(
  deps: PowerAnnotationDeps,
  applied: Map<string, string>,
  looked: Map<string, string>,
  objectPath: string,
  obj: BareMetalHost,
  ref: HostRef,
  key: string,
  a: HostAnnotations,
  /** The workflow's requests as the spec update just returned them, saving a query. */
  fresh: PowerRequestsView | undefined,
): Promise<void> {
  const change: PowerRequestChange = { rebootAnnotation: a.reboot ?? null, holdOff: a.powerOff, onlyThese: true };
  const print = JSON.stringify(change);
  const handle = deps.client.workflow.getHandle(hostWorkflowId(ref));
  const known = applied.get(key);
  const current = async (): Promise<PowerRequestsView> => fresh ?? (await handle.query(hostViewQuery)).power;
  let power: PowerRequestsView;
  if (known === print) {
    if (!a.reboot) {
      looked.delete(key);
      return;
    }
    // Only the one-shot's progress can have moved, and only with the host's history: a describe says whether it
    // did. Each reconcile of a rebooting host (its status writes, the safety net below) queried it before, and a
    // query meeting one of its local activities is the replay fault of docs/adr/0006-local-activity-heartbeat.md.
    if (fresh) power = fresh;
    else {
      const { mark } = await markedHostRun(deps.client, ref);
      if (looked.get(key) === mark) {
        deps.requeueAfter(key, 5000);
        return;
      }
      power = (await handle.query(hostViewQuery)).power;
      // Not once it is done: a removal that fails (a conflict) must read it again.
      if (power.annotation !== 'done') looked.set(key, mark);
    }
  } else if (known === undefined && !a.reboot && Object.keys(a.powerOff).length === 0) {
    // First sight without reboot annotations: update only if the workflow holds requests
    // from annotations removed while no controller was watching.
    power = await current();
    if (power && (power.annotation !== undefined || Object.keys(power.holds ?? {}).length > 0)) {
      power = await handle.executeUpdate(powerRequestsUpdate, { args: [change] });
    }
    applied.set(key, print);
  } else {
    power = await handle.executeUpdate(powerRequestsUpdate, { args: [change] });
    applied.set(key, print);
  }
  if (a.reboot && power.annotation === 'done') {
    await deps.rest.call('PATCH', objectPath, {
      body: { metadata: { annotations: { [ANNOTATIONS.reboot]: null }, resourceVersion: obj.metadata.resourceVersion } },
      contentType: MERGE,
    });
    deps.log?.(`${ref.namespace}/${ref.name}: reboot done, removed ${ANNOTATIONS.reboot}`);
  } else if (a.reboot) {
    // The status write that ends the reboot brings the host back; this is the safety net.
    deps.requeueAfter(key, 5000);
  }
}
