/**
 * The Redfish services of the DMTF mockup server (redfish-mockup.ts), each a
 * MockupRoute tried in order after authentication: sessions, task monitors,
 * ComputerSystem.Reset, and GET/PATCH of the tree's resources (the last
 * answers every request that reaches it). Apart from the server so each
 * service's behaviour reads on its own; redfish-mockup-firmware.ts adds BIOS
 * settings and firmware updates the same way.
 */
import { randomBytes } from 'node:crypto';
import type { MockupRoute } from './redfish-mockup';

export type Json = Record<string, unknown>;

export const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

function merge(target: Json, patch: Json): Json {
  const out: Json = { ...target };
  for (const [k, v] of Object.entries(patch)) {
    out[k] = isObject(v) && isObject(out[k]) ? merge(out[k] as Json, v) : v;
  }
  return out;
}

export function redfishError(status: number, messageId: string, message: string): { status: number; body: Json } {
  return {
    status,
    body: {
      error: {
        code: messageId,
        message,
        '@Message.ExtendedInfo': [{ '@odata.type': '#Message.v1_1_1.Message', MessageId: messageId, Message: message, Severity: 'Critical' }],
      },
    },
  };
}

export const SESSIONS_PATH = '/redfish/v1/SessionService/Sessions';
const MONITOR_PREFIX = '/redfish/v1/TaskService/TaskMonitors/';

/** POST of a session: how a client authenticates, so it is served before the auth check. */
export const createSession: MockupRoute = (m, { method, path, body }, answer) => {
  if (method !== 'POST' || path !== SESSIONS_PATH) return false;
  const error = (e: { status: number; body: Json }) => answer(e.status, e.body);
  if (m.sessionsBroken) {
    error(redfishError(405, 'Base.1.0.OperationNotAllowed', 'Session creation is disabled on this service'));
    return true;
  }
  const b = isObject(body) ? body : {};
  if (b.UserName !== m.username || b.Password !== m.password) {
    error(redfishError(401, 'Base.1.0.NoValidSession', 'The authentication credentials included with this request are missing or invalid'));
    return true;
  }
  const id = m.newId();
  const token = randomBytes(16).toString('hex');
  m.sessions.set(token, id);
  const location = `${SESSIONS_PATH}/${id}`;
  answer(
    201,
    { '@odata.id': location, '@odata.type': '#Session.v1_5_0.Session', Id: id, Name: `Session ${id}`, UserName: m.username },
    { 'x-auth-token': token, location },
  );
  return true;
};

/** A session (GET, DELETE ends it) and the list of sessions. */
export const sessions: MockupRoute = (m, { method, path }, answer) => {
  if (path.startsWith(`${SESSIONS_PATH}/`)) {
    const id = path.slice(SESSIONS_PATH.length + 1);
    const token = [...m.sessions.entries()].find(([, sid]) => sid === id)?.[0];
    if (!token) {
      const e = redfishError(404, 'Base.1.0.ResourceMissingAtURI', `No session ${id}`);
      answer(e.status, e.body);
      return true;
    }
    if (method === 'DELETE') {
      m.sessions.delete(token);
      answer(204);
    } else {
      answer(200, { '@odata.id': path, Id: id, UserName: m.username });
    }
    return true;
  }
  if (path === SESSIONS_PATH && method === 'GET') {
    const members = [...m.sessions.values()].map((id) => ({ '@odata.id': `${SESSIONS_PATH}/${id}` }));
    answer(200, { '@odata.id': SESSIONS_PATH, Members: members, 'Members@odata.count': members.length });
    return true;
  }
  return false;
};

/**
 * A task's monitor (202 while Running; each poll counts down `pollsLeft`, then the task applies) and
 * the task itself. A task the server does not know is the tree's (404 at a monitor path).
 */
export const tasks: MockupRoute = (m, { path }, answer) => {
  if (!path.startsWith(MONITOR_PREFIX) && !path.startsWith('/redfish/v1/TaskService/Tasks/')) return false;
  const id = path.split('/').pop()!;
  const task = m.task(id);
  if (!task) {
    if (!path.startsWith(MONITOR_PREFIX)) return false;
    const e = redfishError(404, 'Base.1.0.ResourceMissingAtURI', `No task monitor ${id}`);
    answer(e.status, e.body);
    return true;
  }
  const monitor = path.startsWith(MONITOR_PREFIX);
  if (monitor && task.state === 'Running') {
    if (task.pollsLeft > 0) {
      task.pollsLeft--;
    } else if (task.fail) {
      task.state = 'Exception';
    } else if (!task.ready || task.ready()) {
      task.fail = task.apply() || undefined;
      task.state = task.fail ? 'Exception' : 'Completed';
    }
  }
  const t: Json = {
    '@odata.id': `/redfish/v1/TaskService/Tasks/${id}`,
    '@odata.type': '#Task.v1_7_0.Task',
    Id: id,
    TaskState: task.state,
    TaskStatus: task.state === 'Exception' ? 'Critical' : 'OK',
    TaskMonitor: `${MONITOR_PREFIX}${id}`,
    Messages: task.state === 'Exception' ? [{ MessageId: 'Base.1.0.InternalError', Message: task.fail }] : [],
  };
  answer(monitor && task.state === 'Running' ? 202 : 200, t, monitor ? { location: `${MONITOR_PREFIX}${id}` } : {});
  return true;
};

/** ComputerSystem.Reset within the mockup's AllowableValues: at once, or (asyncActions) as a task. */
export const reset: MockupRoute = (m, { method, path, body }, answer) => {
  const resetSuffix = '/Actions/ComputerSystem.Reset';
  if (method !== 'POST' || !path.endsWith(resetSuffix)) return false;
  const error = (e: { status: number; body: Json }) => answer(e.status, e.body);
  const systemPath = path.slice(0, -resetSuffix.length);
  const system = m.resource(systemPath);
  if (!system) {
    error(redfishError(404, 'Base.1.0.ResourceMissingAtURI', `No system at ${systemPath}`));
    return true;
  }
  const action = ((system.Actions as Json | undefined)?.['#ComputerSystem.Reset'] ?? {}) as Json;
  const allowed = (action['ResetType@Redfish.AllowableValues'] as string[] | undefined) ?? [];
  const type = isObject(body) ? body.ResetType : undefined;
  if (typeof type !== 'string' || !allowed.includes(type)) {
    error(redfishError(400, 'Base.1.0.ActionParameterNotSupported', `The value ${String(type)} for the parameter ResetType in the action ComputerSystem.Reset is not supported`));
    return true;
  }
  const apply = () => {
    const before = (m.resource(systemPath) ?? system).PowerState;
    const power = ['ForceOff', 'GracefulShutdown'].includes(type) ? 'Off' : type === 'Nmi' ? (system.PowerState as string) : 'On';
    m.setResource(systemPath, { ...(m.resource(systemPath) ?? system), PowerState: power, LastResetTime: new Date().toISOString() });
    const boots = /Restart|PowerCycle/.test(type) || (power === 'On' && before === 'Off');
    if (boots) for (const hook of m.onBoot) hook(systemPath);
  };
  if (!m.asyncActions) {
    apply();
    answer(204);
    return true;
  }
  const id = m.addTask(apply);
  answer(202, { '@odata.id': `/redfish/v1/TaskService/Tasks/${id}`, Id: id, TaskState: 'New' }, { location: `${MONITOR_PREFIX}${id}` });
  return true;
};

/**
 * GET of any resource of the tree with its ETag; PATCH of computer systems and virtual media slots
 * with If-Match (428 without, 412 when it changed). Answers every request: 404 where the tree has
 * nothing, 405 for other methods.
 */
export const resources: MockupRoute = (m, { method, path, body, ifMatch }, answer) => {
  const error = (e: { status: number; body: Json }, headers?: Record<string, string>) => answer(e.status, e.body, headers);
  const current = m.resource(path);
  if (!current) {
    error(redfishError(404, 'Base.1.0.ResourceMissingAtURI', `The resource at the URI ${path} was not found`));
    return true;
  }

  if (method === 'GET') {
    answer(200, current, { etag: m.etag(path)! });
    return true;
  }

  if (method === 'PATCH') {
    // Writable here: computer systems and virtual media slots.
    if (!/^\/redfish\/v1\/Systems\/[^/]+(\/VirtualMedia\/[^/]+)?$/.test(path)) {
      error(redfishError(405, 'Base.1.0.OperationNotAllowed', `PATCH is not allowed on ${path}`), { allow: 'GET, HEAD' });
      return true;
    }
    if (!isObject(body)) {
      error(redfishError(400, 'Base.1.0.MalformedJSON', 'The request body was malformed JSON'));
      return true;
    }
    if (m.concurrentChanges > 0) {
      m.concurrentChanges--;
      const oem = isObject(current.Oem) ? current.Oem : {};
      m.setResource(path, { ...current, Oem: { ...oem, ChangedBy: `another client ${m.newId()}` } });
    }
    if (!ifMatch) {
      error(redfishError(428, 'Base.1.0.PreconditionRequired', 'A precondition header or annotation is required to change this resource'));
      return true;
    }
    if (ifMatch !== m.etag(path)) {
      error(redfishError(412, 'Base.1.0.PreconditionFailed', 'The ETag supplied did not match the ETag required to change this resource'));
      return true;
    }
    const boot = isObject(body.Boot) ? body.Boot : undefined;
    const targets = isObject(current.Boot) ? (current.Boot['BootSourceOverrideTarget@Redfish.AllowableValues'] as string[] | undefined) : undefined;
    if (boot && typeof boot.BootSourceOverrideTarget === 'string' && targets && !targets.includes(boot.BootSourceOverrideTarget)) {
      error(redfishError(400, 'Base.1.0.PropertyValueNotInList', `The value ${boot.BootSourceOverrideTarget} for the property BootSourceOverrideTarget is not in the list of acceptable values`));
      return true;
    }
    const updated = merge(m.resource(path)!, body);
    m.setResource(path, updated);
    answer(200, updated, { etag: m.etag(path)! });
    return true;
  }

  error(redfishError(405, 'Base.1.0.OperationNotAllowed', `${method} is not allowed on ${path}`), { allow: 'GET, HEAD' });
  return true;
};
