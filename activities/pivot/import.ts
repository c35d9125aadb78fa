/**
 * The pivot's writes to the target plane and their undoing: Secrets copied
 * cluster to cluster inside one call (their data never leaves this process),
 * then the host, paused with the pivot's value and carrying Metal3's status
 * annotation, then its HardwareData. Everything created is marked with the
 * pivot's name; the roll-back removes only what carries that mark.
 */
import { ApplicationFailure } from '@temporalio/common';
import { isKubeError } from '../../clients/kubernetes/kube-error';
import type { KubeRest } from '../../clients/kubernetes/kube-rest';
import {
  bmhObjectPath,
  createObject,
  deleteObject,
  ensureNamespace,
  getObject,
  hardwareDataPath,
  patchMetadata,
  secretPath,
  type KubeObject,
  type SecretObject,
} from '../../clients/kubernetes/metal3-objects';
import type { HostRef } from '../../model/host';
import { PIVOT_ANNOTATION, pivotPauseValue } from '../../model/pivot';
import type { PivotManifest } from '../../contracts/pivot';
import { METAL3_ANNOTATIONS, referencedSecrets } from './export';

/** A refusal by the target's API server (admission, validation, RBAC): retrying changes nothing, the host rolls back. */
function refusedByTarget(what: string, err: unknown): never {
  if (isKubeError(err, 'rejected')) {
    throw ApplicationFailure.create({ type: 'PivotImportRefused', nonRetryable: true, message: `the target refused ${what}: ${err.message}` });
  }
  throw err;
}

const conflict = (message: string): ApplicationFailure => ApplicationFailure.create({ type: 'PivotTargetConflict', nonRetryable: true, message });

const sameData = (a: Record<string, string> | undefined, b: Record<string, string> | undefined): boolean =>
  JSON.stringify(Object.entries(a ?? {}).sort()) === JSON.stringify(Object.entries(b ?? {}).sort());

/** Creates what the target lacks; finds its own earlier copy on a retry; refuses to take over anything else. */
export async function importHost(source: KubeRest, target: KubeRest, pivot: string, m: PivotManifest): Promise<void> {
  const { namespace, name } = m.ref;
  const mark = { [PIVOT_ANNOTATION]: pivot };
  await ensureNamespace(target, namespace).catch((err: unknown) => refusedByTarget(`namespace ${namespace}`, err));
  for (const secretName of m.secrets) {
    const secret = await getObject<SecretObject>(source, secretPath(namespace, secretName));
    if (!secret) throw conflict(`Secret ${namespace}/${secretName} disappeared from the source`);
    const body = { apiVersion: 'v1', kind: 'Secret', metadata: { name: secretName, namespace, labels: secret.metadata.labels ?? {}, annotations: mark }, type: secret.type ?? 'Opaque', data: secret.data ?? {} };
    const made = await createObject(target, secretPath(namespace), body).catch((err: unknown) => refusedByTarget(`Secret ${namespace}/${secretName}`, err));
    if ('exists' in made) {
      // Someone's identical Secret is used as it is (and left alone by a roll-back); different data is a conflict.
      const there = await getObject<SecretObject>(target, secretPath(namespace, secretName));
      if (there && !sameData(there.data, secret.data)) throw conflict(`Secret ${namespace}/${secretName} exists in the target with other data`);
    }
  }
  const host = {
    apiVersion: 'metal3.io/v1alpha1',
    kind: 'BareMetalHost',
    metadata: {
      name,
      namespace,
      labels: m.labels,
      // Paused until the source has let go; the status annotation makes the target adopt, not register from scratch.
      annotations: { ...m.annotations, ...mark, [METAL3_ANNOTATIONS.paused]: pivotPauseValue(pivot), [METAL3_ANNOTATIONS.status]: m.statusAnnotation },
    },
    spec: m.spec,
  };
  const made = await createObject(target, bmhObjectPath(namespace), host).catch((err: unknown) => refusedByTarget(`BareMetalHost ${namespace}/${name}`, err));
  if ('exists' in made) {
    const there = await getObject<KubeObject>(target, bmhObjectPath(namespace, name));
    if (there?.metadata.annotations?.[PIVOT_ANNOTATION] !== pivot) throw conflict(`a BareMetalHost ${namespace}/${name} already exists in the target`);
  }
  if (m.hardwareData) {
    const hw = { apiVersion: 'metal3.io/v1alpha1', kind: 'HardwareData', metadata: { name, namespace, annotations: mark }, spec: m.hardwareData };
    await createObject(target, hardwareDataPath(namespace), hw).catch((err: unknown) => refusedByTarget(`HardwareData ${namespace}/${name}`, err));
  }
}

async function deleteIfOurs(rest: KubeRest, path: string, pivot: string, dropFinalizers: boolean): Promise<void> {
  const obj = await getObject<KubeObject>(rest, path);
  if (!obj || obj.metadata.annotations?.[PIVOT_ANNOTATION] !== pivot) return;
  await deleteObject(rest, path);
  // The target's controller put its finalizer on a host it never ran (it stayed paused): nothing to clean up behind it.
  if (dropFinalizers && (await getObject(rest, path))) await patchMetadata(rest, path, { finalizers: null });
}

/** Before hand-over only: the target's copy removed (only what this pivot created), the source unfrozen. */
export async function rollBackHost(source: KubeRest, target: KubeRest, pivot: string, ref: HostRef): Promise<void> {
  const { namespace, name } = ref;
  const obj = await getObject<KubeObject<Record<string, unknown>>>(source, bmhObjectPath(namespace, name));
  await deleteIfOurs(target, bmhObjectPath(namespace, name), pivot, true);
  await deleteIfOurs(target, hardwareDataPath(namespace, name), pivot, false);
  for (const s of referencedSecrets(obj?.spec)) await deleteIfOurs(target, secretPath(namespace, s.name), pivot, false);
  await unfreeze(source, ref, pivot);
}

/** Freezes the source host with the pivot's own pause value (idempotent; another's pause is never taken over). */
export async function freeze(rest: KubeRest, ref: HostRef, pivot: string): Promise<void> {
  const path = bmhObjectPath(ref.namespace, ref.name);
  const obj = await getObject<KubeObject>(rest, path);
  if (!obj) throw conflict(`BareMetalHost ${ref.namespace}/${ref.name} is gone from the source`);
  const paused = obj.metadata.annotations?.[METAL3_ANNOTATIONS.paused];
  if (paused === pivotPauseValue(pivot)) return;
  if (paused !== undefined) throw conflict(`the source host was paused by someone else meanwhile ("${paused}")`);
  await patchMetadata(rest, path, { annotations: { [METAL3_ANNOTATIONS.paused]: pivotPauseValue(pivot) }, resourceVersion: obj.metadata.resourceVersion });
}

/** Removes the pivot's pause (only its own value: a user's pause stays). */
export async function unfreeze(rest: KubeRest, ref: HostRef, pivot: string, extra: Record<string, string> = {}): Promise<void> {
  const path = bmhObjectPath(ref.namespace, ref.name);
  const obj = await getObject<KubeObject>(rest, path);
  if (!obj) return;
  const ours = obj.metadata.annotations?.[METAL3_ANNOTATIONS.paused] === pivotPauseValue(pivot);
  if (!ours && Object.keys(extra).length === 0) return;
  await patchMetadata(rest, path, { annotations: { ...extra, ...(ours ? { [METAL3_ANNOTATIONS.paused]: null } : {}) }, resourceVersion: obj.metadata.resourceVersion });
}
