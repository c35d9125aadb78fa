/**
 * A pivot between two API-mode planes (metalflow HTTP APIs), through the
 * routes any admin has. Nothing is created in the target before hand-over (an
 * API host cannot exist without its workflow running): freeze is
 * `PUT …/paused` with the pivot's reason, export a `GET`, hand-over
 * `PUT …/detached` in the source and then one `PUT …/hosts/{name}` in the
 * target with the exported status and the host's Secrets inline, read here
 * from this worker's own secret store (the source plane's): from one store to
 * the other inside one activity, never in history. A target that refuses the
 * create is undone by attaching the source again.
 */
import { readFile } from 'node:fs/promises';
import { ApplicationFailure } from '@temporalio/common';
import { answerMessage, apiHostPath, MetalflowApi, type ApiAnswer } from '../../control/plane-api-client';
import type { SecretReader } from '../../clients/secrets/secret-store';
import { readSecretKey } from '../common/secret-key';
import type { HostRef, HostSpec } from '../../model/host';
import { pivotPauseValue, type PivotSelector } from '../../model/pivot';
import { EMPTY_PLANE_REGISTRY, originAllowed, urlOrigin, type PivotPlaneRegistry, type RegisteredPlane } from '../../config/pivot-planes';
import type { HostView } from '../../contracts/host';
import type { FleetSelection } from '../../contracts/fleet';
import { selectionMatches } from '../../model/fleet-selection';
import type { PivotExpect, PivotManifest } from '../../contracts/pivot';
import { heartbeat, pause } from '../common/activity-context';
import { referencedSecrets, STEADY_STATES } from './export';

export interface ApiPlaneDeps {
  /** The worker's secret store: the source hosts' Secrets, and a plane's tokenSecret. */
  secrets?: SecretReader;
  /** The planes the operator registered, for their allowedUrls. */
  planes?: PivotPlaneRegistry;
}

/** A target's refusal of the create: the source was attached again, the host runs on there. */
export const PIVOT_TARGET_REFUSED = 'PivotTargetRefused';

const unusable = (field: string, message: string): ApplicationFailure =>
  ApplicationFailure.create({ type: 'PivotPlaneUnusable', nonRetryable: true, message: `${field}: ${message}` });

/** The plane's API client; the token read now, from the file or Secret the operator registered for it. */
export async function apiPlane(deps: ApiPlaneDeps, plane: RegisteredPlane, side: 'source' | 'target'): Promise<MetalflowApi> {
  const field = plane.id ? `${side}.plane` : side;
  const name = `plane "${plane.id}"`;
  const api = plane.api;
  if (!api) throw unusable(field, `${plane.id ? name : "the worker's own cluster"} is a Kubernetes plane; the other side is a metalflow API plane (both must be of one kind)`);
  // The registry checked it at start; checked again here, before the token is read, as the one place a request is sent from.
  if (!originAllowed(deps.planes ?? EMPTY_PLANE_REGISTRY, api.url)) throw unusable(field, `${name}'s URL ${urlOrigin(api.url) ?? api.url} is not on allowedUrls`);
  let token: string | undefined;
  if (api.tokenFile) {
    try {
      token = (await readFile(api.tokenFile, 'utf8')).trim();
    } catch (err) {
      throw unusable(field, `${name}'s token file cannot be read: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
    }
  } else if (api.tokenSecret) {
    const { namespace, name: secret, key = 'token' } = api.tokenSecret;
    if (!deps.secrets) throw unusable(field, `${name}'s token is a Secret, and the worker has no secret store to read it from`);
    token = (await deps.secrets.read(namespace, secret))?.[key]?.trim();
    if (!token) throw unusable(field, `${name}'s Secret ${namespace}/${secret} has no non-empty key "${key}"`);
  }
  if (!token) throw unusable(field, `${name}'s token is empty`);
  return new MetalflowApi(api.url, token);
}

/** The host's view, or undefined for a 404; any other answer but 200 is an error naming the plane. */
export async function apiHost(api: MetalflowApi, ref: HostRef, side: string): Promise<HostView | undefined> {
  const a = await api.call<HostView>('GET', apiHostPath(ref));
  if (a.status === 404) return undefined;
  if (a.status !== 200) throw refusedBy(side, 'GET', ref, a);
  return a.body;
}

const refusedBy = (side: string, what: string, ref: HostRef, a: ApiAnswer): ApplicationFailure =>
  ApplicationFailure.create({ type: 'PivotApiRefused', nonRetryable: a.status !== 429, message: `the ${side} API answered ${what} of ${ref.namespace}/${ref.name} with ${answerMessage(a)}` });

export async function apiSelect(api: MetalflowApi, selector: PivotSelector): Promise<FleetSelection> {
  const q = selector.namespace ? `?namespace=${encodeURIComponent(selector.namespace)}` : '';
  const a = await api.call<{ items: Array<{ namespace: string; name: string; provisioningState: string; bmcType: string }> }>('GET', `/v1/hosts${q}`);
  if (a.status !== 200) throw ApplicationFailure.create({ type: 'PivotApiRefused', nonRetryable: true, message: `the source API answered GET /v1/hosts with ${answerMessage(a)}` });
  const key = (r: HostRef) => `${r.namespace}/${r.name}`;
  const hosts: FleetSelection['hosts'] = [];
  for (const item of a.body.items) {
    const ref = { namespace: item.namespace, name: item.name };
    // The list has no labels: read them only when the selector asks.
    const labels = selector.labelSelector ? ((await apiHost(api, ref, 'source'))?.labels ?? {}) : {};
    const candidate = { ref, provisioningState: item.provisioningState || 'unmanaged', bmcType: item.bmcType, labels };
    if (selectionMatches(candidate, selector)) hosts.push({ ref, provisioningState: candidate.provisioningState, bmcType: item.bmcType });
  }
  const present = new Set(a.body.items.map((i) => key(i)));
  const missing = (selector.hosts ?? []).filter((r) => !present.has(key(r)));
  hosts.sort((x, y) => key(x.ref).localeCompare(key(y.ref)));
  return { at: new Date().toISOString(), hosts, missing: [...new Map(missing.map((r) => [key(r), r])).values()].sort((x, y) => key(x).localeCompare(key(y))) };
}

/** Why the source host cannot move now, or undefined (as sourceProblem, through the API and the worker's store). */
export async function apiSourceProblem(api: MetalflowApi, secrets: SecretReader | undefined, ref: HostRef, pivot: string, credentialSites: readonly string[] = []): Promise<string | undefined> {
  const view = await apiHost(api, ref, 'source');
  if (!view) return 'the host does not exist in the source';
  if (view.deleteRequested) return 'the host is being deleted in the source';
  if (view.movedTo) return `the host was already moved by pivot ${view.movedTo.pivot}`;
  if (view.paused && view.paused.reason !== pivotPauseValue(pivot)) return `the source host is paused by someone else ("${view.paused.reason}"); their pause is left alone`;
  const state = view.status.provisioning.state;
  if (!STEADY_STATES.includes(state)) return `the source host is in state "${state || 'none'}", not one of ${STEADY_STATES.join(', ')}`;
  if (view.status.operationalStatus !== 'OK') return `the source host's operationalStatus is "${view.status.operationalStatus}", not OK`;
  if (!secrets) return "the worker running the pivot has no secret store to read the source host's Secrets from";
  for (const s of referencedSecrets(view.spec as Record<string, unknown> | undefined, credentialSites.includes(view.spec?.site ?? ''))) {
    if (!(await secrets.read(ref.namespace, s.name))) return `Secret ${ref.namespace}/${s.name} (${s.field}) does not exist in the source's store`;
  }
  return undefined;
}

export async function apiTargetProblem(api: MetalflowApi, ref: HostRef): Promise<string | undefined> {
  if (await apiHost(api, ref, 'target')) return `a host ${ref.namespace}/${ref.name} already exists in the target`;
  return undefined;
}

/** Pauses the source host with the pivot's reason and waits until it is paused and idle. */
export async function apiFreeze(api: MetalflowApi, ref: HostRef, pivot: string): Promise<void> {
  const reason = pivotPauseValue(pivot);
  const now = await apiHost(api, ref, 'source');
  if (!now) throw new Error(`${ref.namespace}/${ref.name} is gone from the source`);
  if (now.paused && now.paused.reason !== reason) throw new Error(`the source host was paused by someone else meanwhile ("${now.paused.reason}")`);
  if (!now.paused) {
    const a = await api.call('PUT', apiHostPath(ref, '/paused'), { reason });
    if (a.status !== 200) throw refusedBy('source', 'PUT …/paused', ref, a);
  }
  await waitView(api, ref, 'source', (v) => v?.paused?.reason === reason && !v.currentOperation, 'the host is paused and idle');
}

/** Removes the pivot's pause (only its own) from the source. */
export async function apiUnfreeze(api: MetalflowApi, ref: HostRef, pivot: string): Promise<void> {
  const view = await apiHost(api, ref, 'source');
  if (view?.paused?.reason !== pivotPauseValue(pivot)) return;
  const a = await api.call('DELETE', apiHostPath(ref, '/paused'));
  if (a.status !== 200 && a.status !== 404) throw refusedBy('source', 'DELETE …/paused', ref, a);
}

async function waitView(api: MetalflowApi, ref: HostRef, side: string, done: (v: HostView | undefined) => boolean, what: string): Promise<HostView | undefined> {
  for (let delay = 300; ; delay = Math.min(delay * 1.5, 3000)) {
    const view = await apiHost(api, ref, side);
    if (done(view)) return view;
    heartbeat({ waiting: what, operation: view?.currentOperation?.kind });
    await pause(delay);
  }
}

/** The source host as the target's create takes it: spec, labels and status; Secrets by name only. */
export async function apiExport(api: MetalflowApi, ref: HostRef, credentialSites: readonly string[] = []): Promise<PivotManifest> {
  const view = await apiHost(api, ref, 'source');
  if (!view) throw new Error(`${ref.namespace}/${ref.name} is gone from the source`);
  const spec = (view.spec ?? {}) as HostSpec & Record<string, unknown>;
  const status = view.status;
  const expect: PivotExpect = {
    provisioningState: status.provisioning.state,
    poweredOn: status.poweredOn === true,
    ...(status.provisioning.image?.url ? { image: status.provisioning.image.url } : {}),
    ...(spec.consumerRef ? { consumerRef: spec.consumerRef as PivotExpect['consumerRef'] } : {}),
    ...(status.provisioning.ID ? { sourceNodeId: status.provisioning.ID } : {}),
  };
  return {
    ref,
    labels: view.labels ?? {},
    annotations: {},
    spec,
    statusAnnotation: JSON.stringify(status),
    secrets: referencedSecrets(spec, credentialSites.includes(spec.site ?? '')).map((s) => s.name),
    expect,
  };
}

/** Detaches the source as it is (the pause gives way once the detach is asked) and waits until it reports detached. */
export async function apiDetach(api: MetalflowApi, ref: HostRef, pivot: string): Promise<void> {
  const view = await apiHost(api, ref, 'source');
  if (!view) throw new Error(`${ref.namespace}/${ref.name} is gone from the source before it was detached`);
  if (view.status.operationalStatus !== 'detached') {
    // Asking again is harmless: the same detach.
    const a = await api.call('PUT', apiHostPath(ref, '/detached'), { deleteAction: 'delete' });
    if (a.status !== 200) throw refusedBy('source', 'PUT …/detached', ref, a);
  }
  await apiUnfreeze(api, ref, pivot);
  await waitView(api, ref, 'source', (v) => v?.status.operationalStatus === 'detached' && !v.currentOperation, 'the source host is detached');
}

/**
 * The host's Secrets as the create request carries them inline, read from the source's store; not the BMC
 * credentials of a site that holds them itself (the target's API refuses them, and the site keeps them).
 */
async function inlineSecrets(secrets: SecretReader, ref: HostRef, spec: HostSpec, credentialSites: readonly string[]): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  if (spec.bmc?.credentialsName && !credentialSites.includes(spec.site ?? '')) {
    const [username, password] = await Promise.all([
      readSecretKey(secrets, ref.namespace, spec.bmc.credentialsName, ['username']),
      readSecretKey(secrets, ref.namespace, spec.bmc.credentialsName, ['password']),
    ]);
    out.credentials = { username, password };
  }
  for (const key of ['userData', 'networkData', 'metaData'] as const) {
    const name = spec[key]?.name;
    if (name) out[key] = await readSecretKey(secrets, ref.namespace, name, [key, 'value']);
  }
  return out;
}

/**
 * Creates the host in the target with the source's status and its Secrets inline (restored, registered,
 * adopted there). Already there (a retry): done. Refused: the source is attached again and unpaused,
 * and a non-retryable PivotTargetRefused says so.
 */
export async function apiCreateInTarget(
  source: MetalflowApi,
  target: MetalflowApi,
  secrets: SecretReader | undefined,
  ref: HostRef,
  manifest: Pick<PivotManifest, 'labels' | 'spec' | 'statusAnnotation'>,
  credentialSites: readonly string[] = [],
): Promise<void> {
  if (await apiHost(target, ref, 'target')) return;
  if (!secrets) throw unusable('source.api', "the worker running the pivot has no secret store to read the source host's Secrets from");
  const spec = manifest.spec as HostSpec;
  const status = JSON.parse(manifest.statusAnnotation) as HostView['status'];
  const body = { metadata: { labels: manifest.labels }, spec, status, ...(await inlineSecrets(secrets, ref, spec, credentialSites)) };
  const a = await target.call('PUT', apiHostPath(ref), body);
  if (a.status === 201 || a.status === 200) return;
  if (a.status === 429) throw refusedBy('target', 'PUT', ref, a);
  // A 409 from a create sent twice (the first answer lost): the host is there, the move goes on.
  if (await apiHost(target, ref, 'target')) return;
  // Refused for good: the source takes the host back as it is (adopted again), so it is in exactly one plane.
  const back = await source.call('DELETE', apiHostPath(ref, '/detached'));
  if (back.status !== 200) throw refusedBy('source', 'DELETE …/detached after the target refused the host', ref, back);
  throw ApplicationFailure.create({
    type: PIVOT_TARGET_REFUSED,
    nonRetryable: true,
    message: `the target refused the host (${answerMessage(a)}); the source attached it again and runs it on`,
  });
}

/** The source view's status with the detach undone: what the source showed before it let go (for a create after a new run lost the export). */
export function statusBeforeDetach(view: HostView, expect: PivotExpect | undefined): string {
  const status = structuredClone(view.status);
  status.operationalStatus = 'OK';
  if (expect?.sourceNodeId) status.provisioning.ID = expect.sourceNodeId;
  return JSON.stringify(status);
}

/** Deletes the detached source (no deprovisioning) and waits until it is gone. */
export async function apiRemoveSource(api: MetalflowApi, ref: HostRef): Promise<void> {
  const view = await apiHost(api, ref, 'source');
  if (view) {
    // Never delete a host that is not detached: its delete would deprovision it.
    if (view.status.operationalStatus !== 'detached') throw new Error(`the source host ${ref.namespace}/${ref.name} is not detached; it is not deleted`);
    if (!view.deleteRequested) {
      const a = await api.call('DELETE', apiHostPath(ref));
      if (a.status !== 202 && a.status !== 404) throw refusedBy('source', 'DELETE', ref, a);
    }
  }
  await waitView(api, ref, 'source', (v) => v === undefined, 'the source host to go');
}
