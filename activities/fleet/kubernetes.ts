/**
 * A fleet operation's change to a host of Kubernetes mode, made where that
 * host's truth is: its BareMetalHost. Metal3's own fields and annotations, so
 * the controller hands the change to the host workflow as it would any user's
 * `kubectl` edit, and neither undoes the other:
 *
 * | operation | on the BareMetalHost |
 * |---|---|
 * | provision / deprovision | `spec.image` set / removed |
 * | reboot | `reboot.metal3.io: {"mode": …}` (the controller removes it once done) |
 * | powerOff / powerOn | `reboot.metal3.io/fleet-<name>` set / removed |
 * | reinspect | `inspect.metal3.io: ""` |
 * | detach / attach | `baremetalhost.metal3.io/detached` set / removed |
 * | delete | the object deleted (its finalizer waits for the host workflow) |
 * | moveSite | the `metalflow.io/site` label set (removed for the default site) |
 * | abort | `baremetalhost.metal3.io/paused: <the abort's reason>` |
 *
 * Each write is a merge patch that sets what it sets whatever was there, so a
 * retry writes the same thing again.
 */
import type { KubeRest } from '../../clients/kubernetes/kube-rest';
import { bmhObjectPath, deleteObject, getObject, MERGE, patchMetadata } from '../../clients/kubernetes/metal3-objects';
import { ANNOTATIONS as ANNOTATION } from '../../model/metal3-annotations';
import type { FleetOperation } from '../../model/fleet';
import type { HostRef, Image } from '../../model/host';
import { fleetPowerKey } from '../../contracts/fleet';
import { keysToRelease } from '../../contracts/fleet-goals';
import { DEFAULT_SITE, SITE_LABEL } from '../../model/site';
const path = (ref: HostRef): string => bmhObjectPath(ref.namespace, ref.name);

async function patchSpec(rest: KubeRest, ref: HostRef, spec: Record<string, unknown>): Promise<void> {
  await rest.call('PATCH', path(ref), { body: { spec }, contentType: MERGE });
}

/** Writes the fleet's change on the host's BareMetalHost; `holds`: the host's keyed power-off requests (a powerOn releases the fleets'). */
export async function changeBareMetalHost(rest: KubeRest, ref: HostRef, op: FleetOperation, fleet: string, holds: Record<string, unknown>): Promise<void> {
  switch (op.kind) {
    case 'provision':
      return patchSpec(rest, ref, { image: op.image });
    case 'deprovision':
      return patchSpec(rest, ref, { image: null });
    case 'reboot':
      return patchMetadata(rest, path(ref), { annotations: { [ANNOTATION.reboot]: JSON.stringify({ mode: op.mode ?? 'soft' }) } });
    case 'powerOff':
      return patchMetadata(rest, path(ref), { annotations: { [`${ANNOTATION.reboot}/${fleetPowerKey(fleet)}`]: JSON.stringify({ mode: op.mode ?? 'soft' }) } });
    case 'powerOn': {
      const keys = keysToRelease(op, holds);
      if (keys.length === 0) return;
      return patchMetadata(rest, path(ref), { annotations: Object.fromEntries(keys.map((k) => [`${ANNOTATION.reboot}/${k}`, null])) });
    }
    case 'reinspect':
      return patchMetadata(rest, path(ref), { annotations: { [ANNOTATION.inspect]: '' } });
    case 'detach':
      return patchMetadata(rest, path(ref), { annotations: { [ANNOTATION.detached]: JSON.stringify({ deleteAction: op.deleteAction ?? 'delete', force: op.force ?? false }) } });
    case 'attach':
      return patchMetadata(rest, path(ref), { annotations: { [ANNOTATION.detached]: null } });
    case 'delete':
      return deleteObject(rest, path(ref));
    case 'remediate':
      // A HostRemediation, created before this (fleet-remediate.ts).
      throw new Error('a remediation is a HostRemediation, not a change of the BareMetalHost');
    case 'clean':
      // Skipped before this (fleet-goals.ts): a BareMetalHost has no manual clean trigger.
      throw new Error('a manual clean has no trigger on a BareMetalHost');
    case 'moveSite':
      // The host's site is its label; none is the default site. The controller hands the change to the host, which moves.
      return patchMetadata(rest, path(ref), { labels: { [SITE_LABEL]: op.site === DEFAULT_SITE ? null : op.site } });
  }
}

/** An abort's stop: the host paused by its BareMetalHost (the controller tells the workflow, which cancels what runs). */
export async function pauseBareMetalHost(rest: KubeRest, ref: HostRef, reason: string): Promise<void> {
  await patchMetadata(rest, path(ref), { annotations: { [ANNOTATION.paused]: reason } });
}

/** A deprovision stopped before it ran: the image goes back on the BareMetalHost. */
export async function restoreBareMetalHostImage(rest: KubeRest, ref: HostRef, image: Image): Promise<void> {
  await patchSpec(rest, ref, { image });
}

/** A cancelled powerOff fleet's key, released on the BareMetalHost. */
export async function releaseBareMetalHostHold(rest: KubeRest, ref: HostRef, key: string): Promise<void> {
  await patchMetadata(rest, path(ref), { annotations: { [`${ANNOTATION.reboot}/${key}`]: null } });
}

/** The BareMetalHost's labels (selection by labels in Kubernetes mode), or undefined when it is gone. */
export async function bareMetalHostLabels(rest: KubeRest, ref: HostRef): Promise<Record<string, string> | undefined> {
  const obj = await getObject<{ metadata: { labels?: Record<string, string> } }>(rest, path(ref));
  return obj ? (obj.metadata.labels ?? {}) : undefined;
}
