/**
 * Writes a host's status back to its BareMetalHost (merge patch on /status),
 * records a Kubernetes Event for each transition and error, and keeps the
 * HardwareData object named like the host in step with inspection results.
 */
import { createHash } from 'node:crypto';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { HostStatusSchema, type HostRef, type HostStatus } from '../../model/host';
import { fitStrings } from '../../model/fit-schema';
import { laterWriteHeld } from '../../model/status-order';
import { computeConditions, kubeTimestamp, type SiteReading } from '../../model/conditions';
import { hardwareProfileName, isHardwareProfile } from '../../model/hardware-profile';
import { FAILURE } from '../../model/failures';
import { blockMoveChange } from '../../model/clusterctl-move';
import { ANNOTATIONS } from '../../model/metal3-annotations';
import { isKubeError } from '../../clients/kubernetes/kube-error';
import type { KubeRest } from '../../clients/kubernetes/kube-rest';
import { recordHostEvent, withEventRetries, type HostEvent } from '../../clients/kubernetes/events';
import { asBmoEvents } from '../../clients/kubernetes/bmo-events';
import { toFailure } from '../common/failures';

export type { HostEvent } from '../../clients/kubernetes/events';

const GROUP = '/apis/metal3.io/v1alpha1';

interface Owner {
  metadata: { uid: string; name: string; namespace: string; generation?: number; resourceVersion?: string; annotations?: Record<string, string>; deletionTimestamp?: string };
  spec?: { hardwareProfile?: string; bmc?: { address?: string } };
  status?: Record<string, unknown>;
}

/**
 * The object as this process's last write to it answered, kept by the worker's status writer between writes so
 * the next one needs no read: sent with that resourceVersion, a write by anyone else in between (the controller's
 * conditions, a spec edit) is refused and the object read again, as before. `status.hardware` is kept as `{}`
 * (present or not is all a write needs: an inventory that replaces one is written from a fresh read).
 */
export interface KnownHostObject {
  metadata: Owner['metadata'];
  spec?: Owner['spec'];
  status?: Record<string, unknown>;
}

function knownOf(obj: Owner): KnownHostObject {
  const { uid, name, namespace, generation, resourceVersion, annotations, deletionTimestamp } = obj.metadata;
  const status = obj.status && obj.status.hardware !== undefined ? { ...obj.status, hardware: {} } : obj.status;
  return {
    metadata: { uid, name, namespace, generation, resourceVersion, ...(annotations ? { annotations } : {}), ...(deletionTimestamp ? { deletionTimestamp } : {}) },
    ...(obj.spec ? { spec: { hardwareProfile: obj.spec.hardwareProfile, bmc: obj.spec.bmc ? { address: obj.spec.bmc.address } : undefined } } : {}),
    ...(status ? { status } : {}),
  };
}

/**
 * `status.hardwareProfile` as BMO sets it once the profile is matched: what the status had (BMO's
 * or a restored one), else the profile the spec picks (model/hardware-profile.ts); none when unknown.
 */
function statusHardwareProfile(owner: Owner, status: HostStatus): { hardwareProfile?: string } {
  const had = status.hardwareProfile ?? (typeof owner.status?.hardwareProfile === 'string' ? owner.status.hardwareProfile : undefined);
  if (had) return { hardwareProfile: had };
  const name = hardwareProfileName(owner.spec ?? {});
  return isHardwareProfile(name) ? { hardwareProfile: name } : {};
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A JSON merge patch turning `current` into `desired`: keys that disappeared become null. */
export function mergePatchFor(current: unknown, desired: Json): Json {
  const patch: Json = { ...desired };
  if (!isObject(current)) return patch;
  for (const [key, value] of Object.entries(current)) {
    if (!(key in desired)) patch[key] = null;
    else if (isObject(value) && isObject(desired[key])) patch[key] = mergePatchFor(value, desired[key] as Json);
  }
  return patch;
}

const STATUS_WRITE_ATTEMPTS = 5;

/**
 * Recorded (as heartbeat details) once a publish has written the status and HardwareData: a retry
 * of the same activity sends only the Events. Redoing the status write could fail where the first
 * one had passed (the object changed, the write now refused) and take the Events down with it.
 */
interface PublishProgress {
  statusWritten: true;
  /** The object the status went to; the Events are named after it. */
  uid: string;
}

function activityContext(): Context | undefined {
  try {
    return Context.current();
  } catch {
    return undefined;
  }
}

function earlierProgress(): PublishProgress | undefined {
  const details: unknown = activityContext()?.info.heartbeatDetails;
  return isObject(details) && details.statusWritten === true && typeof details.uid === 'string' ? { statusWritten: true, uid: details.uid } : undefined;
}

/** What one publish is: its activity (workflow, run, activity id) when run as one, and the host and status time. */
function eventSeed(ref: HostRef, uid: string, lastUpdated: string | undefined): string {
  let activity = '';
  try {
    const info = Context.current().info;
    activity = `${info.workflowExecution?.workflowId ?? ''}/${info.workflowExecution?.runId ?? ''}/${info.activityId}`;
  } catch {
    // Called outside an activity: the input alone names it.
  }
  return `${activity}|${ref.namespace}/${ref.name}|${uid}|${lastUpdated ?? ''}`;
}

/** `<host>.<hash>`: an Event's name must be a DNS subdomain; the host's name is one. */
function eventName(host: string, seed: string, index: number, event: HostEvent): string {
  const hash = createHash('sha256').update(`${seed}|${index}|${event.type}|${event.reason}|${event.message}`).digest('hex').slice(0, 16);
  return `${host.slice(0, 253 - 17)}.${hash}`;
}

interface PublishDeps {
  rest: KubeRest;
  component?: string;
  warn?: (message: string, meta?: Record<string, unknown>) => void;
}

/** The activity (runs recorded before the worker's status writer): its result, which history keeps, is as it was. */
export function createKubernetesActivities(deps: PublishDeps) {
  const publish = createHostStatusPublish(deps);
  return {
    publishHostStatus: async (input: Omit<PublishInput, 'known'>): Promise<{ published: boolean; hardwareMissing?: true }> => {
      const { known: _object, ...result } = await publish(input);
      return result;
    },
  };
}

/** What the worker's status writer calls (status-writer.ts): the activity's publish, with the object its write left. */
export type HostStatusPublish = ReturnType<typeof createHostStatusPublish>;

export function createHostStatusPublish(deps: PublishDeps) {
  const { rest } = deps;
  const component = deps.component ?? 'metalflow';

  /** A refusal is final (KubernetesRejected), a bug is internal, the rest is retried (activities/common/failures.ts). */
  const transient = (err: unknown): never => {
    throw toFailure(err);
  };

  async function upsertHardwareData(owner: Owner, status: HostStatus): Promise<void> {
    if (!status.hardware) return;
    const path = `${GROUP}/namespaces/${owner.metadata.namespace}/hardwaredata`;
    const body = {
      apiVersion: 'metal3.io/v1alpha1',
      kind: 'HardwareData',
      metadata: {
        name: owner.metadata.name,
        namespace: owner.metadata.namespace,
        ownerReferences: [{ apiVersion: 'metal3.io/v1alpha1', kind: 'BareMetalHost', name: owner.metadata.name, uid: owner.metadata.uid }],
      },
      spec: { hardware: status.hardware },
    };
    // Created first: a host's hardware is written once per run of its workflow, most often when its first
    // inspection ends, when no HardwareData exists yet (a PATCH first met a 404 there, every lifecycle).
    try {
      await rest.call('POST', path, { body });
    } catch (err) {
      if (!isKubeError(err, 'conflict')) throw err;
      await rest.call('PATCH', `${path}/${owner.metadata.name}`, { body: { spec: body.spec }, contentType: 'application/merge-patch+json' });
    }
  }

  /**
   * clusterctl's block-move set or lifted right after the status write that makes it due (model/clusterctl-move.ts),
   * from that write's answer: the controller, which did it on the write's watch event, had to change the object after
   * the worker wrote it, so the worker's next write met a changed object and read it again (a read and a refused
   * write per busy/at-rest change). A paused host's annotations, and a deleting host's, stay the controller's; so does
   * any block-move a failed write here leaves out of step (it writes it after a grace, k8s/controller/reconciler.ts).
   * Returns the object as it now is, or undefined when that is not known (the next write reads it).
   */
  async function liftOrBlockMove(path: string, obj: KnownHostObject): Promise<KnownHostObject | undefined> {
    if (obj.metadata.deletionTimestamp || (obj.metadata.annotations ?? {})[ANNOTATIONS.paused] !== undefined) return obj;
    const change = blockMoveChange(obj as Parameters<typeof blockMoveChange>[0]);
    if (!change) return obj;
    try {
      const written = await rest.call<Owner | undefined>('PATCH', path, { body: { metadata: { annotations: change } }, contentType: 'application/merge-patch+json' });
      return written?.metadata ? knownOf(written) : undefined;
    } catch (err) {
      // The status is written; the controller sets the annotation instead (its grace), and the next write reads the object.
      if (isKubeError(err, 'not-found')) throw err;
      deps.warn?.('could not set clusterctl.cluster.x-k8s.io/block-move after a status write; the controller will', { host: `${obj.metadata.namespace}/${obj.metadata.name}`, error: err instanceof Error ? err.message : String(err) });
      return undefined;
    }
  }

  /** Publishes the status; a host whose object is gone is not an error (it is being deleted). */
  async function publishHostStatus(input: PublishInput): Promise<{ published: boolean; hardwareMissing?: true; stale?: true; known?: KnownHostObject }> {
    const path = `${GROUP}/namespaces/${input.ref.namespace}/baremetalhosts/${input.ref.name}`;
    // The CRD enforces the schema's string limits; a BMC's inventory or Ironic's error text may be longer.
    const fitted = fitStrings(HostStatusSchema, input.status);
    const ctx = activityContext();
    const progress = earlierProgress();
    try {
      let owner: Owner;
      let stale = false;
      let known: KnownHostObject | undefined;
      // The controller writes this status too (an invalid spec, node health): the patch is computed from the object
      // as read and sent with its resourceVersion, so a write in between is read again, never overwritten. The first
      // attempt may start from the object as the last write answered (`known`): no read, unless an inventory the object
      // holds is to be replaced (the merge patch of `status.hardware` needs its keys; a first one needs none).
      const startKnown = !progress && input.known !== undefined && (input.hardwareKept === true || fitted.hardware === undefined || input.known.status?.hardware === undefined);
      for (let attempt = 1; ; attempt++) {
        owner = attempt === 1 && startKnown ? (input.known as Owner) : await rest.call<Owner>('GET', path);
        if (progress) break;
        // A later write is there (another worker's, the workflow having moved on): this one's status is not made.
        // Read with the resourceVersion the write carries, so a later write landing in between is read again here.
        if (input.order && laterWriteHeld(owner.status?.lastUpdated, input.order)) {
          stale = true;
          break;
        }
        if (input.hardwareKept && owner.status?.hardware === undefined) return { published: false, hardwareMissing: true };
        // Computed here, from what is published, against what the object holds: a condition keeps its
        // lastTransitionTime until its status changes, and nothing of it enters workflow history.
        const conditions = computeConditions(fitted, owner.status?.conditions, {
          now: kubeTimestamp(new Date()),
          generation: owner.metadata.generation,
          ...(input.site ? { site: input.site } : {}),
        });
        const status = mergePatchFor(owner.status, { ...(fitted as unknown as Json), ...statusHardwareProfile(owner, fitted), conditions, ...(input.order ? { lastUpdated: input.order } : {}) });
        // Absent from a merge patch: left as the object has it.
        if (input.hardwareKept) delete status.hardware;
        try {
          const written = await rest.call<Owner | undefined>('PATCH', `${path}/status`, { body: { metadata: { resourceVersion: owner.metadata.resourceVersion }, status }, contentType: 'application/merge-patch+json' });
          known = written?.metadata ? knownOf(written) : undefined;
          break;
        } catch (err) {
          if (!isKubeError(err, 'conflict') || attempt >= STATUS_WRITE_ATTEMPTS) throw err;
        }
      }
      if (known) known = await liftOrBlockMove(path, known);
      const uid = progress?.uid ?? owner.metadata.uid;
      if (!progress && !stale) {
        if (!input.hardwareKept) await upsertHardwareData(owner, fitted);
        ctx?.heartbeat({ statusWritten: true, uid } satisfies PublishProgress);
      }
      // Named after this publish (the activity, or the input): a retried publish finds its Events already there.
      const seed = eventSeed(input.ref, uid, fitted.lastUpdated);
      let index = 0;
      const record = async (event: HostEvent, name: (written: HostEvent) => string): Promise<void> => {
        // BMO's reasons where it has the same Event (clients/kubernetes/bmo-events.ts).
        for (const written of asBmoEvents(event, fitted.poweredOn)) {
          // Named once: each retry of the POST must carry the same name.
          const named = name(written);
          await withEventRetries(() => recordHostEvent(rest, { ...owner.metadata, uid }, written, component, named), ctx ? (ms) => ctx.sleep(ms) : undefined);
        }
      };
      for (const event of [...(input.event ? [input.event] : []), ...(input.events ?? [])]) await record(event, (written) => eventName(input.ref.name, seed, index++, written));
      // Each named by its own seed, whatever else it is sent with: a write sent again finds it there.
      for (const named of input.namedEvents ?? []) {
        let own = 0;
        await record(named.event, (written) => eventName(input.ref.name, `${named.seed}|${input.ref.namespace}/${input.ref.name}|${uid}`, own++, written));
      }
      return stale ? { published: false, stale: true } : { published: true, ...(known ? { known } : {}) };
    } catch (err) {
      if (isKubeError(err, 'not-found')) return { published: false };
      return transient(err);
    }
  }

  return publishHostStatus;
}

export interface PublishInput {
  ref: HostRef;
  status: HostStatus;
  /** Runs before `background-status-publish` send one event; later ones send what gathered meanwhile. */
  event?: HostEvent;
  events?: HostEvent[];
  /** The worker's status writer (status-writer.ts): Events named by their seeds, not by the activity. */
  namedEvents?: { seed: string; event: HostEvent }[];
  /** `status.hardware` is left out as unchanged since this run's last write: the object's stays. */
  hardwareKept?: boolean;
  /** A host of a configured site: its `SiteReachable` condition (absent: the condition is left as it is). */
  site?: SiteReading;
  /** The object as this process's last write answered (status-writer.ts): written against without a read first. */
  known?: KnownHostObject;
  /**
   * The write's place in the host's order (model/status-order.ts), written as `status.lastUpdated`: when the
   * object holds a later one, the status is not written (`stale`), its Events are.
   */
  order?: string;
}

export type KubernetesActivities = ReturnType<typeof createKubernetesActivities>;

/**
 * The status activity of a worker with no API server configured. Left unregistered, the SDK fails
 * the task as retryable ("not registered"), and the write was retried for ever; this fails it for
 * good, saying what is missing, and the host goes on.
 */
export function createUnconfiguredKubernetesActivities(): KubernetesActivities {
  return {
    publishHostStatus: async (input: { ref: HostRef }) => {
      throw ApplicationFailure.nonRetryable(
        `cannot write the status of BareMetalHost ${input.ref.namespace}/${input.ref.name}: this worker has no Kubernetes API server configured (METALFLOW_KUBECONFIG, or a pod's service account); run Kubernetes-mode hosts on workers that have one`,
        FAILURE.kubernetesNotConfigured,
      );
    },
  };
}
