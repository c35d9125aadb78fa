/**
 * The pivot's reads of the source plane: which hosts are selected, whether a
 * host may move, and its export (spec, labels, annotations, Metal3's status
 * annotation, HardwareData, the names of the Secrets it references).
 */
import type { KubeRest } from '../../clients/kubernetes/kube-rest';
import { SITE_LABEL } from '../../model/site';
import { bmhObjectPath, getObject, hardwareDataPath, secretPath, servesBareMetalHosts, type KubeObject } from '../../clients/kubernetes/metal3-objects';
import type { HostRef, HostStatus } from '../../model/host';
import { parseBmcAddress } from '../../model/bmc';
import { PIVOT_ANNOTATION, pivotPauseValue, type PivotSelector } from '../../model/pivot';
import type { FleetSelection } from '../../contracts/fleet';
import { selectionMatches, type SelectionCandidate } from '../../model/fleet-selection';
import type { PivotExpect, PivotManifest } from '../../contracts/pivot';

export type BareMetalHostObject = KubeObject<Record<string, unknown>, Partial<HostStatus>>;

export const METAL3_ANNOTATIONS = {
  paused: 'baremetalhost.metal3.io/paused',
  detached: 'baremetalhost.metal3.io/detached',
  status: 'baremetalhost.metal3.io/status',
  /** clusterctl move leaves an object carrying it where it is (CAPM3 honours it too). */
  blockMove: 'clusterctl.cluster.x-k8s.io/block-move',
} as const;

/** Where a host must be to move: at rest, in a state the target adopts without touching the hardware. */
export const STEADY_STATES = ['available', 'provisioned', 'externally provisioned'];

/** Annotations that say something about this cluster only, never copied. */
const NOT_COPIED = ['kubectl.kubernetes.io/last-applied-configuration', METAL3_ANNOTATIONS.paused, METAL3_ANNOTATIONS.status, METAL3_ANNOTATIONS.detached, PIVOT_ANNOTATION];

const key = (r: HostRef): string => `${r.namespace}/${r.name}`;

/** The hosts the selector names, from the source's BareMetalHosts (the source cluster is the truth). */
export async function selectBareMetalHosts(rest: KubeRest, selector: PivotSelector): Promise<FleetSelection> {
  const path = selector.namespace ? bmhObjectPath(selector.namespace) : '/apis/metal3.io/v1alpha1/baremetalhosts';
  const list = await rest.call<{ items: BareMetalHostObject[] }>('GET', path);
  const candidates: SelectionCandidate[] = list.items.map((o) => {
    const address = (o.spec?.bmc as { address?: string } | undefined)?.address;
    const parsed = address ? parseBmcAddress(address) : undefined;
    return {
      ref: { namespace: o.metadata.namespace ?? 'default', name: o.metadata.name },
      provisioningState: o.status?.provisioning?.state || 'unmanaged',
      bmcType: parsed?.ok ? parsed.value.type : 'unknown',
      labels: o.metadata.labels ?? {},
    };
  });
  const present = new Set(candidates.map((c) => key(c.ref)));
  const missing = (selector.hosts ?? []).filter((r) => !present.has(key(r)));
  const hosts = candidates
    .filter((c) => selectionMatches(c, selector))
    .sort((a, b) => key(a.ref).localeCompare(key(b.ref)))
    .map(({ ref, provisioningState, bmcType }) => ({ ref, provisioningState, bmcType }));
  return { at: new Date().toISOString(), hosts, missing: [...new Map(missing.map((r) => [key(r), r])).values()].sort((a, b) => key(a).localeCompare(key(b))) };
}

/**
 * The Secrets a host's spec references (credentials, user/network/meta data), with the field naming each.
 * `credentialsAtSite`: the host's site holds its BMC credentials itself (`"secrets": "site"`, docs/sites.md):
 * they are not in the central store, so a pivot neither looks for nor copies them (the site keeps them).
 */
export function referencedSecrets(spec: Record<string, unknown> | undefined, credentialsAtSite = false): Array<{ field: string; name: string }> {
  const out: Array<{ field: string; name: string }> = [];
  const credentials = (spec?.bmc as { credentialsName?: string } | undefined)?.credentialsName;
  if (credentials && !credentialsAtSite) out.push({ field: 'spec.bmc.credentialsName', name: credentials });
  for (const f of ['userData', 'networkData', 'metaData'] as const) {
    const name = (spec?.[f] as { name?: string } | undefined)?.name;
    if (name) out.push({ field: `spec.${f}`, name });
  }
  return out;
}

/** Whether the BareMetalHost's site label names a site that holds its hosts' BMC credentials. */
const credentialsAtSite = (obj: { metadata: { labels?: Record<string, string> } }, credentialSites: readonly string[]): boolean =>
  credentialSites.includes(obj.metadata.labels?.[SITE_LABEL] ?? '');

/** Why the source host cannot move now, or undefined. */
export async function sourceProblem(rest: KubeRest, ref: HostRef, pivot: string, credentialSites: readonly string[] = []): Promise<string | undefined> {
  const obj = await getObject<BareMetalHostObject>(rest, bmhObjectPath(ref.namespace, ref.name));
  if (!obj) return 'the BareMetalHost does not exist in the source';
  if (obj.metadata.deletionTimestamp) return 'the BareMetalHost is being deleted in the source';
  const a = obj.metadata.annotations ?? {};
  if (METAL3_ANNOTATIONS.blockMove in a) return `the source host carries ${METAL3_ANNOTATIONS.blockMove}`;
  if (METAL3_ANNOTATIONS.detached in a) return 'the source host is detached';
  const paused = a[METAL3_ANNOTATIONS.paused];
  if (paused !== undefined && paused !== pivotPauseValue(pivot)) return `the source host is paused by someone else (${METAL3_ANNOTATIONS.paused}: "${paused}"); their pause is left alone`;
  const state = obj.status?.provisioning?.state ?? '';
  if (!STEADY_STATES.includes(state)) return `the source host is in state "${state || 'none'}", not one of ${STEADY_STATES.join(', ')}`;
  if (obj.status?.operationalStatus !== 'OK') return `the source host's operationalStatus is "${obj.status?.operationalStatus ?? ''}", not OK`;
  for (const s of referencedSecrets(obj.spec, credentialsAtSite(obj, credentialSites))) {
    if (!(await getObject(rest, secretPath(ref.namespace, s.name)))) return `Secret ${ref.namespace}/${s.name} (${s.field}) does not exist in the source`;
  }
  return undefined;
}

/** Why the target cannot take the host, or undefined. */
export async function targetProblem(rest: KubeRest, ref: HostRef, pivot: string): Promise<string | undefined> {
  if (!(await servesBareMetalHosts(rest))) return 'the target API server does not serve metal3.io/v1alpha1 baremetalhosts (CRDs not installed)';
  const there = await getObject<BareMetalHostObject>(rest, bmhObjectPath(ref.namespace, ref.name));
  if (there && there.metadata.annotations?.[PIVOT_ANNOTATION] !== pivot) return `a BareMetalHost ${ref.namespace}/${ref.name} already exists in the target`;
  return undefined;
}

/** The source host as the target gets it; read while it is frozen, so every read agrees. */
export async function exportHost(rest: KubeRest, ref: HostRef, credentialSites: readonly string[] = []): Promise<PivotManifest> {
  const obj = await getObject<BareMetalHostObject>(rest, bmhObjectPath(ref.namespace, ref.name));
  if (!obj) throw new Error(`BareMetalHost ${ref.namespace}/${ref.name} is gone from the source`);
  const hardware = await getObject<KubeObject<Record<string, unknown>>>(rest, hardwareDataPath(ref.namespace, ref.name));
  const status = obj.status ?? {};
  const spec = obj.spec ?? {};
  const expect: PivotExpect = {
    provisioningState: status.provisioning?.state ?? '',
    poweredOn: status.poweredOn === true,
    ...(status.provisioning?.image?.url ? { image: status.provisioning.image.url } : {}),
    ...(spec.consumerRef ? { consumerRef: spec.consumerRef as PivotExpect['consumerRef'] } : {}),
    ...(status.provisioning?.ID ? { sourceNodeId: status.provisioning.ID } : {}),
  };
  return {
    ref,
    labels: obj.metadata.labels ?? {},
    annotations: Object.fromEntries(Object.entries(obj.metadata.annotations ?? {}).filter(([k]) => !NOT_COPIED.includes(k))),
    spec,
    // Metal3's status annotation is the object's .status marshalled as JSON: the status as the API server serves it.
    statusAnnotation: JSON.stringify(status),
    ...(hardware?.spec ? { hardwareData: hardware.spec } : {}),
    secrets: [...new Set(referencedSecrets(spec, credentialsAtSite(obj, credentialSites)).map((s) => s.name))],
    expect,
  };
}
