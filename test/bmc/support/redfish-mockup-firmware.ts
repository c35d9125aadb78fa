/**
 * BIOS settings and firmware updates on the DMTF mockup server, with the
 * behaviour the mockup's resources describe: PATCHes to a system's
 * `Bios/Settings` (the `@Redfish.Settings` SettingsObject) stay pending and
 * replace the current `Bios` attributes when the system boots (a reset to On
 * or a restart); `UpdateService/Actions/SimpleUpdate` answers 202 with a task
 * monitor, fetches the image, and the task completes with the target
 * component's `Version` set to the image's text (or ends in Exception with
 * the fetch error). Unknown attributes and non-http(s) images are 400s.
 */
import type { MockupRoute, RedfishMockup } from './redfish-mockup';

type Json = Record<string, unknown>;
const obj = (v: unknown): Json => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : {});

const bad = (messageId: string, message: string): Json => ({
  error: { code: messageId, message, '@Message.ExtendedInfo': [{ MessageId: messageId, Message: message, Severity: 'Critical' }] },
});

const SIMPLE_UPDATE = '/redfish/v1/UpdateService/Actions/SimpleUpdate';
const DEFAULT_TARGET = '/redfish/v1/UpdateService/FirmwareInventory/BIOS';

/** The images SimpleUpdate fetched, by URL (what a test can assert the BMC downloaded). */
export interface FirmwareMockup {
  fetched: string[];
}

export function addFirmware(m: RedfishMockup): FirmwareMockup {
  const state: FirmwareMockup = { fetched: [] };

  const settings: MockupRoute = (mock, { method, path, body }, answer) => {
    if (method !== 'PATCH' || !/^\/redfish\/v1\/Systems\/[^/]+\/Bios\/Settings$/.test(path)) return false;
    const current = obj(mock.resource(path.replace(/\/Settings$/, ''))?.Attributes);
    const changes = obj(obj(body).Attributes);
    const unknown = Object.keys(changes).filter((k) => !(k in current));
    if (unknown.length > 0) {
      answer(400, bad('Base.1.0.PropertyUnknown', `The property ${unknown.join(', ')} is not in the list of valid properties for the resource`));
      return true;
    }
    const pending = mock.resource(path)!;
    mock.setResource(path, { ...pending, Attributes: { ...obj(pending.Attributes), ...changes } });
    answer(204);
    return true;
  };

  const update: MockupRoute = (mock, { method, path, body }, answer) => {
    if (method !== 'POST' || path !== SIMPLE_UPDATE) return false;
    const b = obj(body);
    const image = b.ImageURI;
    if (typeof image !== 'string' || !/^https?:\/\//.test(image)) {
      answer(400, bad('Base.1.0.ActionParameterValueFormatError', 'ImageURI must be an http or https URL'));
      return true;
    }
    const targets = Array.isArray(b.Targets) ? (b.Targets as unknown[]) : [DEFAULT_TARGET];
    const target = typeof targets[0] === 'string' ? targets[0] : DEFAULT_TARGET;
    if (!mock.resource(target)) {
      answer(400, bad('Base.1.0.ActionParameterValueNotInList', `Target ${target} is not a firmware component`));
      return true;
    }
    let fetched: { ok: true; text: string } | { ok: false; why: string } | undefined;
    void fetch(image)
      .then(async (res) => (fetched = res.ok ? { ok: true, text: (await res.text()).trim() } : { ok: false, why: `HTTP ${res.status}` }))
      .catch((err: Error) => (fetched = { ok: false, why: err.message }));
    state.fetched.push(image);
    const id = mock.addTask(
      () => {
        if (!fetched?.ok) return `Cannot download the firmware image ${image}: ${fetched && !fetched.ok ? fetched.why : 'no answer'}`;
        mock.setResource(target, { ...mock.resource(target)!, Version: fetched.text });
        return undefined;
      },
      () => fetched !== undefined,
    );
    answer(202, { '@odata.id': `/redfish/v1/TaskService/Tasks/${id}`, Id: id, TaskState: 'New' }, { location: `/redfish/v1/TaskService/TaskMonitors/${id}` });
    return true;
  };

  m.routes.push(settings, update);
  m.onBoot.push((systemPath) => {
    const biosPath = `${systemPath}/Bios`;
    const bios = m.resource(biosPath);
    const pending = m.resource(`${biosPath}/Settings`);
    if (!bios || !pending) return;
    const { Messages: _applied, ...applySettings } = obj(bios['@Redfish.Settings']);
    m.setResource(biosPath, {
      ...bios,
      Attributes: { ...obj(bios.Attributes), ...obj(pending.Attributes) },
      '@Redfish.Settings': { ...applySettings, Time: new Date().toISOString() },
    });
  });
  return state;
}
