/**
 * HostFirmwareSettings and FirmwareSchema in Kubernetes mode, as BMO's
 * hostfirmwaresettings_controller keeps them: a registered host gets its
 * HostFirmwareSettings (same name, owned by the BareMetalHost); once it is
 * past inspection, what Ironic reports (`GET …/bios?detail=true`, read by the
 * controller itself: a read belongs in no workflow's history) becomes `status.settings`
 * (a host of a configured site, by its `metalflow.io/site` label, is read in its
 * site's Ironic, which only the site worker reaches: through the firmware read
 * workflow, control/firmware-inventory.ts, whose read runs on the site's queue),
 * the registry a FirmwareSchema shared by hosts of the same hardware
 * (`schema-<hash>`, `status.schema` naming it), and `ChangeDetected`/`Valid`
 * are set as BMO sets them, with a Warning Event per invalid setting. A valid
 * change on an available host is handed to the host workflow as a manual
 * clean with one `bios` step (its `requestClean` update); on a provisioned host
 * it is held for servicing at the next reboot (firmware-hold.ts): the
 * controller never sends Ironic anything. HostFirmwareComponents ride on the same read
 * (firmware-components.ts); their `firmware` step goes in the same request.
 * Re-read when the host comes to rest in a state (READ_ON_ARRIVAL; not when it only registered again
 * where it rests, readsOnHostChange), every minute while a change is
 * pending (BMO's delay), else every 30 minutes (`METALFLOW_FIRMWARE_RESYNC_SECONDS`;
 * BMO's 5 minutes cost 288,000 reads a day at 1,000 hosts for what changes only
 * through a clean, a service or an inspection, each a state change). A read
 * whose answer, objects and host state are as at the last quiet pass writes
 * and asks nothing more.
 */
import { WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import type { KubeRest } from '../../clients/kubernetes/kube-rest';
import { isKubeError, KubeError } from '../../clients/kubernetes/kube-error';
import { recordHostEvent, withEventRetries } from '../../clients/kubernetes/events';
import { createObject, getObject } from '../../clients/kubernetes/metal3-objects';
import { createHash } from 'node:crypto';
import { IronicError, type IronicClient } from '../../clients/ironic/client';
import { readNodeFirmware, type NodeFirmware } from '../../clients/ironic/firmware-inventory';
import { FirmwareReadError, readFirmwareInventory } from '../../control/firmware-inventory';
import { hostSiteQueue, SITE_LABEL } from '../../model/site';
import type { CleanRequest, CleanStep } from '../../model/clean';
import { FIRMWARE, type HostFirmwareSettingsSpec, type HostFirmwareSettingsStatus } from '../../model/firmware-settings';
import { evaluateFirmwareSettings, firmwareConditions, firmwareSchemaName, firmwareSchemaOf, reportedSettings, sameConditions, type Condition } from '../../model/firmware-status';
import { hostWorkflowId } from '../../model/host-ref';
import { formatFieldErrors, type FieldError } from '../../model/field-error';
import { hostViewQuery, requestCleanUpdate, type HostView } from '../../contracts/host';
import { COMPONENTS } from '../../model/firmware-components';
import { ANNOTATIONS } from './annotations';
import { FirmwareComponents, type HostFirmwareComponentsObject } from './firmware-components';
import { holdForServicing, SERVICED_READ_MARGIN_MS, type HoldDeps } from './firmware-hold';
import { Informer, watchPaths, type KubeObject } from './informer';
import type { BareMetalHost } from './bare-metal-host';
import { WorkQueue } from './work-queue';

const API = `${FIRMWARE.group}/${FIRMWARE.version}`;
const base = (namespace: string | undefined, plural: string) => (namespace ? `/apis/${API}/namespaces/${namespace}/${plural}` : `/apis/${API}/${plural}`);
export const hfsPath = (namespace?: string, name?: string): string => `${base(namespace, FIRMWARE.settings.plural)}${name ? `/${name}` : ''}`;
export const hfcPath = (namespace?: string, name?: string): string => `${base(namespace, COMPONENTS.plural)}${name ? `/${name}` : ''}`;
export const firmwareSchemaPath = (namespace: string, name?: string): string => `${base(namespace, FIRMWARE.schema.plural)}${name ? `/${name}` : ''}`;

type Owner = { apiVersion: string; kind: string; name: string; uid: string; controller?: boolean; blockOwnerDeletion?: boolean };
export interface HostFirmwareSettingsObject extends KubeObject {
  metadata: KubeObject['metadata'] & { ownerReferences?: Owner[] };
  spec?: HostFirmwareSettingsSpec;
  status?: HostFirmwareSettingsStatus;
}

/**
 * How long the hosts of a site that took no firmware read wait before the next try: one read found the site dark,
 * so its other hosts do not each hold one of the controller's reconciles for the read's start limit.
 */
export const DARK_SITE_RETRY_MS = 300_000;

/** States before Ironic has read the host's BIOS, or after the host is gone: nothing to report. */
const NOT_READ_IN = new Set(['', 'unmanaged', 'registering', 'inspecting', 'match profile', 'deleting', 'powering off before delete']);

/**
 * Where a host's state change asks for a read of Ironic's record of its firmware: the states a host rests in once an
 * operation that can change that record (inspection, a clean, a deploy's automated clean, a service) is over. On
 * the way there (preparing, provisioning, deprovisioning) Ironic is at work: a read then cost two Ironic requests
 * for what the resting state reads again. Changes of the objects, and the timers of a pending change, still read in
 * any state but NOT_READ_IN.
 */
const READ_ON_ARRIVAL = new Set(['available', 'ready', 'provisioned', 'externally provisioned']);

/**
 * Whether a host's change (its `node|state|operationalStatus` mark, before and now) asks for a read of Ironic now.
 * A node new to this controller: its objects are made now. Otherwise only a state of rest reads Ironic, except a
 * registration again where the host rests (Ironic lost its node and the host registered again, or it was attached
 * again): the new node is the same machine's, and with the last pass quiet (`quiet`: nothing pending, the next read
 * scheduled) that next read takes the new node. No BIOS and firmware read per host while a fleet registers again
 * after Ironic lost its database, when Ironic's time is the re-registrations'. BMO's HostFirmwareSettings controller
 * does not read on a new node either: it reads on its own schedule.
 */
export function readsOnHostChange(before: string | undefined, mark: string, quiet: boolean): boolean {
  const [id = '', state = '', operational = ''] = mark.split('|');
  if (before === undefined) return true;
  const [beforeId = '', beforeState = '', beforeOperational = ''] = before.split('|');
  const registeredAgain = quiet && beforeId !== '' && id !== '' && beforeId !== id && beforeState === state && beforeOperational === operational;
  if (registeredAgain) return false;
  return beforeId !== id || READ_ON_ARRIVAL.has(state);
}

export interface FirmwareSettingsDeps {
  rest: KubeRest;
  client: Client;
  taskQueue: string;
  /** The watched namespaces; every namespace when unset (METALFLOW_WATCH_NAMESPACE). */
  namespaces?: readonly string[];
  /** Read only: the controller never changes anything in Ironic. The default site's; a configured site's is read through its site worker. */
  ironic: IronicClient;
  /** The configured sites (METALFLOW_SITES_FILE): a host labelled with another is invalid, and not read. */
  sites?: readonly string[];
  /** The BareMetalHost of that key, from the host informer's cache. */
  host: (key: string) => BareMetalHost | undefined;
  /** How often a host's firmware is read again (1800 s; 60 s, or this if shorter, while a change is pending). */
  resyncSeconds?: number;
  /** Which controller process writes the Events. */
  instance: string;
  log: (message: string) => void;
}

/** HostFirmwareSettings, FirmwareSchema and HostFirmwareComponents, one Ironic read per host. */
export class FirmwareSettingsController {
  private readonly queue: WorkQueue;
  private readonly informer: Informer<HostFirmwareSettingsObject>;
  /** Each host's node and state when last reconciled: a host event with the same says nothing new. */
  private readonly seen = new Map<string, string>();
  /** Each HostFirmwareSettings' uid and generation when last queued. */
  private readonly generations = new Map<string, string>();
  /** The errors last said in Events, per object (see warn). */
  private readonly warned = new Map<string, string>();
  /** Per host, what its last pass with nothing pending read and saw (see quietMark). */
  private readonly quiet = new Map<string, string>();
  /**
   * Per FirmwareSchema, the owners it is known to hold: a schema shared by a thousand hosts of one model
   * is read again only when an owner may be missing, not once per host (its owner list grows with the fleet).
   */
  private readonly schemaOwners = new Map<string, Set<string>>();

  private readonly components: FirmwareComponents;
  private readonly holdDeps: HoldDeps;
  /** Per configured site whose worker took no firmware read: until when its hosts' reads wait. */
  private readonly darkSites = new Map<string, number>();

  constructor(private readonly deps: FirmwareSettingsDeps) {
    this.queue = new WorkQueue((key) => this.reconcile(key), { maxQueued: 100_000, concurrency: 8, baseBackoffMs: 1000, maxBackoffMs: 60_000 });
    this.components = new FirmwareComponents({
      rest: deps.rest,
      namespaces: deps.namespaces,
      path: hfcPath,
      create: (host) => createForHost<HostFirmwareComponentsObject>(deps, COMPONENTS, host, { updates: [] }),
      warn: (obj, kind, errors, reported, prefix) => this.warn(obj, kind, errors, reported, prefix),
      changed: (key) => this.objectChanged(this.components.informer, `${COMPONENTS.kind}/${key}`, key),
      log: deps.log,
    });
    this.holdDeps = { client: deps.client, log: deps.log, event: (obj, type, reason, message) => this.event(obj, FIRMWARE.settings.kind, type, reason, message) };
    // As BMO: a change of spec (generation), or a new object; not its own status writes.
    this.informer = new Informer<HostFirmwareSettingsObject>(deps.rest, watchPaths(deps.namespaces, (ns) => hfsPath(ns)), (key) => this.objectChanged(this.informer, `${FIRMWARE.settings.kind}/${key}`, key), { log: deps.log });
  }

  async start(): Promise<void> {
    await this.informer.start();
    await this.components.informer.start();
  }

  stop(): void {
    this.informer.stop();
    this.components.informer.stop();
    this.queue.stop();
  }

  private objectChanged(informer: Informer<KubeObject>, kindKey: string, key: string): void {
    const obj = informer.cache.get(key);
    const mark = obj ? `${obj.metadata.uid ?? ''}|${obj.metadata.generation ?? 0}` : '';
    if (this.generations.get(kindKey) === mark) return;
    this.generations.set(kindKey, mark);
    this.queue.add(key);
  }

  /** The host informer saw a change: reconciled when the host's node or state moved. */
  hostChanged(key: string): void {
    const host = this.deps.host(key);
    // operationalStatus too: a service ending (servicing → OK) changes what Ironic reports, and no state.
    const id = host?.status?.provisioning?.ID ?? '';
    const state = host?.status?.provisioning?.state ?? '';
    const mark = host ? `${id}|${state}|${host.status?.operationalStatus ?? ''}` : '';
    const before = this.seen.get(key);
    if (before === mark) return;
    this.seen.set(key, mark);
    if (!host || readsOnHostChange(before, mark, this.quiet.has(key))) this.queue.add(key);
  }

  private async reconcile(key: string): Promise<void> {
    const [namespace = '', name = ''] = key.split('/');
    const host = this.deps.host(key);
    if (!host || host.metadata.deletionTimestamp || host.metadata.annotations?.[ANNOTATIONS.detached] !== undefined) return;
    const nodeId = host.status?.provisioning?.ID ?? '';
    // A direct host has no Ironic node to read (its firmware is the bios/firmware clean steps' over Redfish).
    if (!nodeId || (host.spec as { provisioner?: string } | undefined)?.provisioner === 'direct') return;
    const hfs = this.informer.cache.get(key) ?? (await this.create(host));
    if (!hfs || NOT_READ_IN.has(host.status?.provisioning?.state ?? '')) return;
    const site = host.metadata.labels?.[SITE_LABEL];
    const atSite = hostSiteQueue(site) !== undefined ? site : undefined;
    // A label naming no configured site makes the host InvalidSpec (reconciler.ts): no site to read it at.
    if (atSite && !(this.deps.sites ?? []).includes(atSite)) {
      this.queue.addAfter(key, (this.deps.resyncSeconds ?? 1800) * 1000);
      return;
    }
    const darkUntil = atSite ? (this.darkSites.get(atSite) ?? 0) : 0;
    if (darkUntil > Date.now()) {
      this.queue.addAfter(key, darkUntil - Date.now());
      return;
    }
    let inventory: NodeFirmware;
    const readAt = Date.now();
    try {
      // The default site's Ironic is the controller's to read; a configured site's only its site worker reaches.
      inventory = atSite ? await readFirmwareInventory(this.deps.client, this.deps.taskQueue, { namespace, name }, { nodeId, site: atSite }) : await readNodeFirmware(this.deps.ironic, nodeId);
    } catch (err) {
      if (atSite && err instanceof FirmwareReadError && err.type === 'SiteUnreachable') {
        this.darkSites.set(atSite, Date.now() + DARK_SITE_RETRY_MS);
        this.deps.log(`${key}: ${err.message}; its site's hosts are read again in ${DARK_SITE_RETRY_MS / 1000} s`);
        this.queue.addAfter(key, DARK_SITE_RETRY_MS);
        return;
      }
      if (!(err instanceof IronicError || err instanceof FirmwareReadError)) throw err;
      this.deps.log(`${key}: reading the host's firmware from Ironic${atSite ? ` of site "${atSite}"` : ''} failed: ${err.message}; read again in 30 s`);
      this.queue.addAfter(key, 30_000);
      return;
    }
    const resync = this.deps.resyncSeconds ?? 1800;
    const mark = this.quietMark(key, host, hfs, inventory);
    if (this.quiet.get(key) === mark) {
      this.queue.addAfter(key, resync * 1000);
      return;
    }
    this.quiet.delete(key);
    const components = await this.components.reconcile(host, inventory.components ?? []);
    const schema = firmwareSchemaOf(inventory.bios);
    const settings = reportedSettings(inventory.bios);
    const schemaRef = await this.schemaFor(hfs, host, schema);
    const desired = (hfs.spec?.settings ?? {}) as Record<string, string | number>;
    const evaluation = evaluateFirmwareSettings(desired, settings, schema);
    const generation = hfs.metadata.generation ?? 0;
    const conditions = firmwareConditions(hfs.status?.conditions as Partial<Condition>[] | undefined, evaluation, generation, new Date().toISOString());
    const dirty =
      // Field by field: the API server gives keys back sorted (Go maps), not in the order written.
      hfs.status?.schema?.namespace !== schemaRef.namespace ||
      hfs.status.schema.name !== schemaRef.name ||
      JSON.stringify(sortedEntries(hfs.status?.settings)) !== JSON.stringify(sortedEntries(settings)) ||
      !sameConditions(hfs.status?.conditions as Partial<Condition>[] | undefined, conditions);
    if (dirty) {
      const status: HostFirmwareSettingsStatus = { schema: schemaRef, settings, conditions, lastUpdated: new Date().toISOString() };
      await this.deps.rest.call('PUT', `${hfsPath(namespace, name)}/status`, { body: { ...hfs, status } });
      const said = conditions.map((c) => `${c.type}=${c.status}`).join(', ');
      this.deps.log(`${key}: HostFirmwareSettings status: ${Object.keys(settings).length} settings, schema ${schemaRef.name}, ${said}`);
    }
    await this.warn(hfs, FIRMWARE.settings.kind, evaluation.errors, Object.keys(settings).length > 0);
    const steps: CleanStep[] = [];
    // Images first: a new BIOS may bring settings (and a registry) of its own.
    if (components.step) steps.push(components.step);
    if (evaluation.changeDetected && evaluation.errors.length === 0) steps.push({ name: 'bios', settings: evaluation.changed });
    // A provisioned host holds the change for servicing at its next reboot, as its HostUpdatePolicy allows (firmware-hold.ts).
    if (host.status?.provisioning?.state === 'provisioned') {
      if ((await holdForServicing(this.holdDeps, hfs, steps, components, readAt)) === 'stale') {
        this.queue.addAfter(key, SERVICED_READ_MARGIN_MS);
        return;
      }
    } else if (steps.length > 0 && (await this.apply(hfs, steps))) await components.handed();
    // No updates asked (the list emptied): nothing for the hardware, recorded as handed over.
    else if (components.changeDetected && !components.step) await components.handed();
    const pending = evaluation.changeDetected || components.changeDetected;
    // Read back through the informer, this pass's own status write moves the mark once; the next quiet pass settles it.
    if (!pending) this.quiet.set(key, this.quietMark(key, host, this.informer.cache.get(key) ?? hfs, inventory));
    this.queue.addAfter(key, (pending ? Math.min(60, resync) : resync) * 1000);
  }

  /**
   * What a pass depends on: Ironic's answer (hashed: a registry is tens of KB on real servers), the
   * objects' uid, generation and status version, and the host's node, state and operational status.
   */
  private quietMark(key: string, host: BareMetalHost, hfs: HostFirmwareSettingsObject, inventory: unknown): string {
    const hfc = this.components.informer.cache.get(key);
    const p = host.status?.provisioning;
    return [
      createHash('sha256').update(JSON.stringify(inventory)).digest('hex'),
      hfs.metadata.uid, hfs.metadata.generation, hfs.metadata.resourceVersion,
      hfc?.metadata.uid, hfc?.metadata.generation, hfc?.metadata.resourceVersion,
      p?.ID, p?.state, host.status?.operationalStatus,
    ].join('|');
  }

  /** BMO's: spec.settings empty, the BareMetalHost its controller (deleted with it). */
  private create(host: BareMetalHost): Promise<HostFirmwareSettingsObject | undefined> {
    return createForHost<HostFirmwareSettingsObject>(this.deps, FIRMWARE.settings, host, { settings: {} });
  }

  /** The FirmwareSchema of this registry in the host's namespace, created once and shared; this HFS among its owners. */
  private async schemaFor(hfs: HostFirmwareSettingsObject, host: BareMetalHost, schema: ReturnType<typeof firmwareSchemaOf>): Promise<{ namespace: string; name: string }> {
    const namespace = hfs.metadata.namespace ?? '';
    const name = firmwareSchemaName(schema);
    const owner: Owner = { apiVersion: API, kind: FIRMWARE.settings.kind, name: hfs.metadata.name, uid: hfs.metadata.uid ?? '' };
    type SchemaObject = KubeObject & { metadata: { ownerReferences?: Owner[] } };
    const vendor = (host.status as { hardware?: { systemVendor?: { manufacturer?: string; productName?: string } } } | undefined)?.hardware?.systemVendor;
    const spec = {
      ...(vendor?.manufacturer ? { hardwareVendor: vendor.manufacturer } : {}),
      ...(vendor?.productName ? { hardwareModel: vendor.productName } : {}),
      schema,
    };
    // Hosts with one registry share the schema and reconcile at once: a create that lost the race (409), or a first
    // owner list that met another's (a failed test), reads the schema again, so no host drops out of its owners.
    const schemaKey = `${namespace}/${name}`;
    const known = this.schemaOwners.get(schemaKey);
    if (known?.has(owner.uid)) return { namespace, name };
    const append = (): Promise<unknown> =>
      this.deps.rest.call('PATCH', firmwareSchemaPath(namespace, name), { body: [{ op: 'add', path: '/metadata/ownerReferences/-', value: owner }], contentType: 'application/json-patch+json' });
    if (known && known.size > 0) {
      // Known to exist with owners, all of them known: appended unread. Gone since (404), it is read and made again below.
      try {
        await append();
        known.add(owner.uid);
        return { namespace, name };
      } catch (err) {
        if (!isKubeError(err, 'not-found')) throw err;
      }
    }
    for (let attempt = 1; ; attempt++) {
      const existing = await getObject<SchemaObject>(this.deps.rest, firmwareSchemaPath(namespace, name));
      const held = new Set((existing?.metadata.ownerReferences ?? []).map((o) => o.uid));
      this.schemaOwners.set(schemaKey, held);
      try {
        if (!existing) {
          const made = await createObject(this.deps.rest, firmwareSchemaPath(namespace), { apiVersion: API, kind: FIRMWARE.schema.kind, metadata: { name, namespace, ownerReferences: [owner] }, spec });
          if ('created' in made) {
            held.add(owner.uid);
            break;
          }
          if (attempt >= 5) throw new Error(`FirmwareSchema ${namespace}/${name}: already exists, yet not found, ${attempt} times`);
          continue;
        }
        const owners = existing.metadata.ownerReferences ?? [];
        if (owners.some((o) => o.uid === owner.uid)) break;
        // Appended by a JSON patch without a resourceVersion: the API server applies it to whatever the schema holds
        // then, so a thousand hosts of one model add themselves without re-reading a growing object after each conflict.
        if (owners.length > 0) await append();
        else {
          const first = [{ op: 'test', path: '/metadata/resourceVersion', value: existing.metadata.resourceVersion }, { op: 'add', path: '/metadata/ownerReferences', value: [owner] }];
          await this.deps.rest.call('PATCH', firmwareSchemaPath(namespace, name), { body: first, contentType: 'application/json-patch+json' });
        }
        held.add(owner.uid);
        break;
      } catch (err) {
        // A failed `test` of the first owner list is a 422: another host's list landed first.
        if (!(isKubeError(err, 'conflict') || (err instanceof KubeError && err.status === 422)) || attempt >= 5) throw err;
      }
    }
    return { namespace, name };
  }

  /**
   * The steps as the host's manual clean, on an available host with no clean pending; a request of
   * ours (bios/firmware steps only) that failed and waits to retry is replaced by the corrected one.
   * Elsewhere it waits: the host's next state change or the next read brings it back here. True when
   * the host workflow took it.
   */
  private async apply(hfs: HostFirmwareSettingsObject, steps: CleanStep[]): Promise<boolean> {
    const ref = { namespace: hfs.metadata.namespace ?? '', name: hfs.metadata.name };
    const handle = this.deps.client.workflow.getHandle(hostWorkflowId(ref));
    const view: HostView = await handle.query(hostViewQuery);
    const request: CleanRequest = { steps };
    const pending = view.cleanRequest?.request;
    const state = view.status.provisioning.state;
    const fresh = state === 'available' && !pending && !view.spec?.image;
    const correcting = state === 'preparing' && pending !== undefined && view.status.errorCount > 0 && isFirmwareOnly(pending) && JSON.stringify(pending) !== JSON.stringify(request);
    // The change the host held while provisioned, which it took as its clean once deprovisioned: its images are taken
    // (status.updates), never asked again once that clean has flashed them.
    if (view.cleanRequest?.held && sameImages(pending, request)) return true;
    if (!fresh && !correcting) return false;
    try {
      await handle.executeUpdate(requestCleanUpdate, { args: [request] });
    } catch (err) {
      // The host moved on between the query and the update (a provisioning image, a running clean): read again later.
      if (err instanceof WorkflowUpdateFailedError) {
        this.deps.log(`${ref.namespace}/${ref.name}: firmware changes not applied now: ${err.cause?.message ?? err.message}`);
        return false;
      }
      throw err;
    }
    const what = steps.map((s) => (s.name === 'bios' ? `bios (${Object.keys(s.settings ?? {}).sort().join(', ')})` : `firmware (${s.name === 'firmware' ? s.updates.map((u) => u.component).join(', ') : ''})`)).join(', ');
    this.deps.log(`${ref.namespace}/${ref.name}: applying ${what} as the host's clean steps`);
    await this.event(hfs, FIRMWARE.settings.kind, 'Normal', 'SettingsApplying', `applying ${what} as the host's clean steps`);
    return true;
  }

  /**
   * A Warning Event per invalid setting, once per spec generation and set of errors (a status write
   * read back late by the informer would otherwise say them twice). As BMO: none while Ironic
   * reports no settings yet (every desired one would be "unknown").
   */
  async warn(hfs: KubeObject, kind: string, errors: FieldError[], reported: boolean, prefix = 'Invalid BIOS setting'): Promise<void> {
    const key = `${kind}/${hfs.metadata.namespace ?? ''}/${hfs.metadata.name}`;
    const mark = errors.length > 0 && reported ? `${hfs.metadata.uid ?? ''}|${hfs.metadata.generation ?? 0}|${formatFieldErrors(errors)}` : '';
    if (this.warned.get(key) === mark) return;
    this.warned.set(key, mark);
    if (!mark) return;
    this.deps.log(`${key}: ${prefix}: ${formatFieldErrors(errors)}`);
    for (const e of errors) await this.event(hfs, kind, 'Warning', 'ValidationFailed', `${prefix}: ${formatFieldErrors([e])}`);
  }

  private async event(obj: KubeObject, kind: string, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    const subject = { namespace: obj.metadata.namespace ?? '', name: obj.metadata.name, uid: obj.metadata.uid, kind };
    // Sent again while the API server is busy: a held change is recorded once and its Event not written again.
    await withEventRetries(() => recordHostEvent(this.deps.rest, subject, { type, reason, message }, this.deps.instance)).catch((err: unknown) => {
      if (!(err instanceof KubeError)) throw err;
      this.deps.log(`${subject.namespace}/${subject.name}: event ${reason} not recorded: ${err.message}`);
    });
  }
}

/** The object of `kind` for this host, same name, the host its controller; the one there if it exists. */
export async function createForHost<T extends KubeObject>(
  deps: Pick<FirmwareSettingsDeps, 'rest' | 'log'>,
  kind: { kind: string; plural: string },
  host: BareMetalHost,
  spec: unknown,
): Promise<T | undefined> {
  const { namespace = '', name, uid = '' } = host.metadata;
  const owner: Owner = { apiVersion: API, kind: 'BareMetalHost', name, uid, controller: true, blockOwnerDeletion: true };
  const body = { apiVersion: API, kind: kind.kind, metadata: { name, namespace, ownerReferences: [owner] }, spec };
  const path = `${base(namespace, kind.plural)}`;
  const made = await createObject<T>(deps.rest, path, body);
  if ('exists' in made) return getObject<T>(deps.rest, `${path}/${name}`);
  deps.log(`${namespace}/${name}: created its ${kind.kind}`);
  return made.created;
}

const sortedEntries = (m: Record<string, string> | undefined) => Object.entries(m ?? {}).sort(([a], [b]) => a.localeCompare(b));
const imagesOf = (r: CleanRequest | undefined) => r?.steps.find((step) => step.name === 'firmware');
/** Both ask the same firmware images (and `r` asks some). */
const sameImages = (pending: CleanRequest | undefined, r: CleanRequest): boolean => {
  const images = imagesOf(r);
  return images !== undefined && JSON.stringify(imagesOf(pending)) === JSON.stringify(images);
};
const isFirmwareOnly = (r: CleanRequest): boolean => r.steps.every((step) => step.name === 'firmware' || (step.name === 'bios' && step.firmware === undefined));
