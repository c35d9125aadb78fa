/**
 * Firmware over Redfish: the UpdateService's FirmwareInventory (what runs
 * now, by component) and `UpdateService.SimpleUpdate` (the BMC fetches an
 * image by http(s) URL and flashes it), followed through its task monitor
 * to the end. A task that ends in Exception/Killed/Cancelled is a
 * `task-failed` error carrying the BMC's messages.
 */
import { RedfishError } from '../bmc/errors';
import { arr, obj, odataId, str, type Json } from './http';
import type { RedfishClient } from './client';

export type FirmwareComponentKind = 'bios' | 'bmc';

export interface FirmwareComponent {
  /** The inventory member's path. */
  path: string;
  id: string;
  name?: string;
  version?: string;
  updateable: boolean;
  /** What the component belongs to (`RelatedItem`): a system, a manager. */
  relatedItems: string[];
}

async function updateService(c: RedfishClient): Promise<{ path: string; body: Json }> {
  const path = odataId(c.serviceRoot.UpdateService);
  if (!path) throw new RedfishError('unsupported', `the Redfish service at ${c.origin} has no UpdateService`);
  return { path, body: await c.get(path) };
}

/** The managers of the system (`Links.ManagedBy`): a BMC component relates to one of them. */
async function managersOf(c: RedfishClient): Promise<string[]> {
  return arr(obj((await c.getSystem()).Links).ManagedBy)
    .map(odataId)
    .filter((p): p is string => p !== undefined);
}

/**
 * The firmware inventory of this system: members related to the system (or
 * a part of it, e.g. its storage controller) or one of its managers, or
 * related to nothing (a single-system BMC). A
 * service with several systems (sushy-tools) relates each member to one.
 */
export async function firmwareInventory(c: RedfishClient): Promise<FirmwareComponent[]> {
  const { body } = await updateService(c);
  const collection = odataId(body.FirmwareInventory);
  if (!collection) throw new RedfishError('unsupported', `the UpdateService of ${c.origin} has no FirmwareInventory`);
  const paths: string[] = arr((await c.get(collection)).Members)
    .map(odataId)
    .filter((p): p is string => p !== undefined);
  const mine = new Set([c.systemPath, ...(await managersOf(c))]);
  const out: FirmwareComponent[] = [];
  for (const path of paths) {
    const m = await c.get(path);
    const relatedItems = arr(m.RelatedItem)
      .map(odataId)
      .filter((p): p is string => p !== undefined);
    const ours = (r: string) => [...mine].some((p) => r === p || r.startsWith(`${p}/`));
    if (relatedItems.length > 0 && !relatedItems.some(ours)) continue;
    out.push({ path, id: str(m.Id) ?? path.split('/').pop()!, name: str(m.Name), version: str(m.Version), updateable: m.Updateable === true, relatedItems });
  }
  return out;
}

/** The component of a kind: the BIOS relates to the system (or is named BIOS), the BMC to a manager (or is named BMC). */
export function componentOf(inventory: FirmwareComponent[], kind: FirmwareComponentKind, systemPath: string): FirmwareComponent | undefined {
  const named = (c: FirmwareComponent) => new RegExp(kind === 'bios' ? 'bios' : 'bmc', 'i').test(`${c.id} ${c.name ?? ''}`);
  const related = (c: FirmwareComponent) =>
    kind === 'bios' ? c.relatedItems.includes(systemPath) : c.relatedItems.some((r) => r.includes('/Managers/'));
  return inventory.find((c) => named(c) && (c.relatedItems.length === 0 || related(c))) ?? inventory.find(related);
}

/** The transfer protocols SimpleUpdate accepts (its AllowableValues or ActionInfo); undefined when it does not say. */
async function transferProtocols(c: RedfishClient, action: Json): Promise<string[] | undefined> {
  const listed = action['TransferProtocol@Redfish.AllowableValues'];
  if (Array.isArray(listed)) return listed.filter((v): v is string => typeof v === 'string');
  const info = str(action['@Redfish.ActionInfo']);
  if (!info) return undefined;
  const param = arr((await c.get(info)).Parameters)
    .map(obj)
    .find((p) => p.Name === 'TransferProtocol');
  return param && Array.isArray(param.AllowableValues) ? param.AllowableValues.filter((v): v is string => typeof v === 'string') : undefined;
}

export interface SimpleUpdateRequest {
  /** http(s) only: the BMC fetches it. */
  imageUri: string;
  /** The component to flash (its inventory path, or the system/manager path the BMC expects); all the image applies to when absent. */
  targets?: string[];
}

/** A SimpleUpdate as it will be sent: the action's target and its body. */
export interface PreparedUpdate {
  target: string;
  payload: Json;
}

/** Checks the image URL and what the BMC's SimpleUpdate accepts; sends nothing. */
export async function prepareSimpleUpdate(c: RedfishClient, req: SimpleUpdateRequest): Promise<PreparedUpdate> {
  let url: URL;
  try {
    url = new URL(req.imageUri);
  } catch {
    throw new RedfishError('rejected', `firmware image URL ${JSON.stringify(req.imageUri)} is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new RedfishError('rejected', `firmware image URL must be http or https, not ${url.protocol.replace(':', '')}`);
  }
  const protocol = url.protocol === 'https:' ? 'HTTPS' : 'HTTP';
  const { path, body } = await updateService(c);
  const action = obj(obj(body.Actions)['#UpdateService.SimpleUpdate']);
  const target = str(action.target);
  if (!target) throw new RedfishError('unsupported', `the UpdateService ${path} on ${c.origin} offers no SimpleUpdate action`);
  const allowed = await transferProtocols(c, action);
  if (allowed && !allowed.includes(protocol)) {
    throw new RedfishError('unsupported', `SimpleUpdate on ${c.origin} does not accept ${protocol} (it accepts ${allowed.join(', ') || 'none'})`);
  }
  const payload: Json = { ImageURI: req.imageUri, TransferProtocol: protocol };
  if (req.targets && req.targets.length > 0) payload.Targets = req.targets;
  return { target, payload };
}

/**
 * Sends the SimpleUpdate and returns the task the BMC answered with (its
 * monitor), without waiting for it; undefined when the BMC started none (it
 * finished at once).
 */
export async function startSimpleUpdate(c: RedfishClient, update: PreparedUpdate): Promise<string | undefined> {
  return (await c.startAction(update.target, update.payload)).monitor;
}

/** A task of the TaskService that runs (or ran) an update. */
export interface UpdateTask {
  /** Where it is followed: its TaskMonitor, else the Task itself. */
  monitor: string;
  state?: string;
  /** The BMC's clock, ms since epoch; undefined when it does not say. */
  startedAt?: number;
}

const UNFINISHED = new Set(['New', 'Starting', 'Running', 'Suspended', 'Interrupted', 'Pending', 'Stopping', 'Service']);
/** A BMC keeps many finished tasks: only the newest are read, one GET each. */
const TASKS_READ = 32;

const samePath = (a: string, b: string): boolean => {
  const path = (v: string) => (/^https?:\/\//i.test(v) ? new URL(v).pathname : v).replace(/\/+$/, '');
  try {
    return path(a) === path(b);
  } catch {
    return false;
  }
};

/**
 * The TaskService's task for this very update, by the request it records
 * (`Payload`: the SimpleUpdate target and a body with the same ImageURI and
 * Targets): one still running, or one that started at or after `since` (the
 * BMC's clock). Undefined when there is none, or the BMC keeps no task
 * collection or no payloads (nothing can be told apart then).
 */
export async function findUpdateTask(c: RedfishClient, update: PreparedUpdate, since: number): Promise<UpdateTask | undefined> {
  const service = odataId(c.serviceRoot.Tasks);
  if (!service) return undefined;
  let collection: string | undefined;
  let paths: string[];
  try {
    collection = odataId((await c.get(service)).Tasks);
    if (!collection) return undefined;
    paths = arr((await c.get(collection)).Members)
      .map(odataId)
      .filter((p): p is string => p !== undefined);
  } catch (err) {
    // A BMC without a task collection: nothing to find (a real outage shows again on the send).
    if (err instanceof RedfishError && (err.kind === 'not-found' || err.kind === 'unsupported' || err.status === 404)) return undefined;
    throw err;
  }
  const targets = JSON.stringify(update.payload.Targets ?? null);
  for (const path of paths.slice(-TASKS_READ).reverse()) {
    const task = await c.get(path);
    const payload = obj(task.Payload);
    const targetUri = str(payload.TargetUri);
    if (!targetUri || !samePath(targetUri, update.target)) continue;
    let body: Json;
    try {
      body = obj(typeof payload.JsonBody === 'string' ? JSON.parse(payload.JsonBody) : payload.JsonBody);
    } catch {
      continue;
    }
    if (body.ImageURI !== update.payload.ImageURI || JSON.stringify(body.Targets ?? null) !== targets) continue;
    const state = str(task.TaskState);
    const started = Date.parse(str(task.StartTime) ?? '');
    const startedAt = Number.isFinite(started) ? started : undefined;
    const running = state !== undefined && UNFINISHED.has(state);
    if (!running && (startedAt === undefined || startedAt < since)) continue;
    return { monitor: str(task.TaskMonitor) ?? path, ...(state ? { state } : {}), ...(startedAt !== undefined ? { startedAt } : {}) };
  }
  return undefined;
}

/**
 * `UpdateService.SimpleUpdate` with the image's http(s) URL, followed through
 * the task the BMC answers with until it ends. Returns the final task body.
 */
export async function simpleUpdate(c: RedfishClient, req: SimpleUpdateRequest): Promise<Json> {
  const { target, payload } = await prepareSimpleUpdate(c, req);
  return c.postAction(target, payload, { followLocation: true, taskFailKind: 'task-failed' });
}
