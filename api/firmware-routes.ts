/**
 * HostFirmwareSettings in API mode: `GET …/hosts/{name}/firmware-settings`
 * shows what Ironic reports (status.settings, the FirmwareSchema of its BIOS
 * registry, the `ChangeDetected`/`Valid` conditions against the bios clean
 * pending, if any); `PUT` takes Metal3's `spec.settings`, checks it as the
 * Kubernetes controller does (k8s/controller/firmware-settings.ts) and hands
 * the settings that differ to the host as a manual clean with one `bios` step.
 * A setting refused is a 400 naming it, and nothing is sent; settings Ironic
 * already reports change nothing (200). HostFirmwareComponents likewise:
 * `GET …/firmware-components` (Ironic's `GET …/firmware`), `PUT
 * …/firmware-updates` (spec.updates as the host's `firmware` clean step).
 * Ironic is read on the worker (workflows/firmware/firmware-inventory.ts): the
 * host's site's worker for a host of a configured site (a site that takes no
 * read is a 503 naming it).
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { FirmwareReadError, readFirmwareInventory } from '../control/firmware-inventory';
import { HostFirmwareSettingsSpecSchema, type SettingSchemas } from '../model/firmware-settings';
import { evaluateFirmwareSettings, firmwareConditions, firmwareSchemaName, firmwareSchemaOf, reportedSettings, type Condition } from '../model/firmware-status';
import { formatFieldErrors, type FieldError } from '../model/field-error';
import type { HostRef } from '../model/host';
import { holdFirmwareChangeUpdate, type HostView } from '../contracts/host';
import { ApiError, type HostService } from './host-service';
import { HostParamsSchema } from './schemas';
import { componentsFromIronic, firmwareUpdatesErrors, HostFirmwareComponentsSpecSchema, type FirmwareComponentStatus } from '../model/firmware-components';
import type { CleanStep, FirmwareUpdate } from '../model/clean';
import { answers } from './route-answers';

export interface FirmwareSettingsView {
  spec: { settings: Record<string, string | number> };
  status: {
    settings: Record<string, string>;
    schema: { name: string; schema: SettingSchemas };
    conditions: Condition[];
  };
}

export function registerFirmwareRoutes(base: FastifyInstance, hosts: HostService): void {
  const app = base.withTypeProvider<TypeBoxTypeProvider>();

  async function read(ref: HostRef): Promise<{ host: HostView; components: FirmwareComponentStatus[]; view: (desired: Record<string, string | number>) => FirmwareSettingsView & { changed: Record<string, string>; errors: FieldError[] } }> {
    const host = await hosts.get(ref);
    if ('workflowEnded' in host) throw new ApiError(409, 'Conflict', `the host's workflow ended (${host.workflowEnded.status}); re-adopt it first (POST …/adopt)`);
    if (host.spec?.provisioner === 'direct') throw new ApiError(409, 'Conflict', `host ${ref.namespace}/${ref.name} has spec.provisioner direct: Ironic has no node to read; use POST …/clean with bios or firmware steps (over Redfish)`);
    const nodeId = host.status.provisioning.ID;
    if (!nodeId) throw new ApiError(409, 'Conflict', `host ${ref.namespace}/${ref.name} has no Ironic node yet (it is ${host.status.provisioning.state || 'not registered'}): its firmware settings are read once it is registered`);
    let inventory;
    try {
      // A configured site's node is read by its site worker, in the site's Ironic.
      inventory = await readFirmwareInventory(hosts.client, hosts.taskQueue, ref, { nodeId, ...(host.spec?.site ? { site: host.spec.site } : {}) });
    } catch (err) {
      if (err instanceof FirmwareReadError) throw new ApiError(503, 'Unavailable', err.message, [], 30);
      throw err;
    }
    const settings = reportedSettings(inventory.bios);
    const schema = firmwareSchemaOf(inventory.bios);
    const now = new Date().toISOString();
    return {
      host,
      components: componentsFromIronic(inventory.components ?? []),
      view: (desired) => {
        const evaluation = evaluateFirmwareSettings(desired, settings, schema);
        return {
          spec: { settings: desired },
          status: { settings, schema: { name: firmwareSchemaName(schema), schema }, conditions: firmwareConditions(undefined, evaluation, host.generation, now) },
          changed: evaluation.changed,
          errors: evaluation.errors,
        };
      },
    };
  }

  /**
   * A provisioned host holds the change for servicing at its next reboot, as its HostUpdatePolicy allows
   * (workflows/host/rules/firmware-held.ts): this step replaces the held one of its name (none withdraws it), the
   * other kind's stays; firmware before bios, as the controller sends them.
   */
  async function hold(ref: HostRef, host: HostView, name: 'bios' | 'firmware', step: CleanStep | undefined): Promise<HostView> {
    const kept = (host.firmwareHeld?.request.steps ?? []).filter((s) => s.name !== name);
    const steps = [...kept, ...(step ? [step] : [])].sort((a, b) => (a.name === 'firmware' ? 0 : 1) - (b.name === 'firmware' ? 0 : 1));
    if (JSON.stringify(steps) === JSON.stringify(host.firmwareHeld?.request.steps ?? [])) return host;
    return hosts.update(ref, holdFirmwareChangeUpdate, [steps.length > 0 ? { steps } : null]);
  }
  const heldView = (host: HostView) => ({
    applying: false,
    ...(host.firmwareHeld ? { held: host.firmwareHeld } : {}),
    ...(host.settingsHeld ? { settingsHeld: host.settingsHeld } : {}),
  });

  /** The bios settings of the host's pending clean request (or its change held for servicing): what it is being asked to have. */
  const pendingSettings = (host: HostView): Record<string, string> => {
    const step = (host.cleanRequest ?? host.firmwareHeld)?.request.steps.find((s) => s.name === 'bios');
    return step?.name === 'bios' ? (step.settings ?? {}) : {};
  };

  app.get(
    '/v1/namespaces/:namespace/hosts/:name/firmware-settings',
    { schema: { summary: "The host's BIOS settings as Ironic reports them, its FirmwareSchema, and ChangeDetected/Valid against a pending bios clean", params: HostParamsSchema } },
    async (req) => {
      const { host, view } = await read(req.params);
      const { changed: _changed, errors: _errors, ...out } = view(pendingSettings(host));
      return out;
    },
  );

  app.put(
    '/v1/namespaces/:namespace/hosts/:name/firmware-settings',
    {
      config: answers({ 200: 'Nothing to apply or hold: every setting already has its value', 202: 'Applying (a clean step) or held for servicing' }),
      schema: {
        summary:
          "Metal3's HostFirmwareSettings spec.settings: checked against the BIOS registry Ironic reports (400 naming each refused setting, nothing sent); the settings that differ are applied as the host's bios clean step (an available host), or held for servicing at a provisioned host's next reboot (202 with settingsHeld saying why; its HostUpdatePolicy decides)",
        params: HostParamsSchema,
        body: HostFirmwareSettingsSpecSchema,
      },
    },
    async (req, reply) => {
      const desired = req.body.settings as Record<string, string | number>;
      const { host, view } = await read(req.params);
      const { changed, errors, ...shown } = view(desired);
      if (errors.length > 0) throw new ApiError(400, 'InvalidRequest', `invalid firmware settings, nothing sent: ${formatFieldErrors(errors)}`, errors);
      const step: CleanStep | undefined = Object.keys(changed).length > 0 ? { name: 'bios', settings: changed } : undefined;
      if (host.status.provisioning.state === 'provisioned') {
        const held = await hold(req.params, host, 'bios', step);
        return reply.status(held.firmwareHeld?.request.steps.some((s) => s.name === 'bios') ? 202 : 200).send({ ...shown, ...heldView(held) });
      }
      if (!step) return reply.status(200).send({ ...shown, applying: false });
      const cleaned = await hosts.clean(req.params, { steps: [step] });
      return reply.status(202).send({ ...shown, applying: true, cleanRequest: cleaned.cleanRequest });
    },
  );

  app.get(
    '/v1/namespaces/:namespace/hosts/:name/firmware-components',
    { schema: { summary: "The host's firmware components (initial and current versions) as Ironic reports them, and the firmware updates its pending clean asks", params: HostParamsSchema } },
    async (req) => {
      const { host, components } = await read(req.params);
      const step = (host.cleanRequest ?? host.firmwareHeld)?.request.steps.find((s) => s.name === 'firmware');
      return { status: { components, ...(step?.name === 'firmware' ? { updates: step.updates } : {}) } };
    },
  );

  app.put(
    '/v1/namespaces/:namespace/hosts/:name/firmware-updates',
    {
      config: answers({ 200: 'Nothing to flash or hold', 202: 'Flashing (a clean step) or held for servicing' }),
      schema: {
        summary:
          "Metal3's HostFirmwareComponents spec.updates (component bios or bmc, an http(s) URL): checked (400 naming each refused update, nothing sent) and flashed in order as the host's firmware clean step (an available host), or held for servicing at a provisioned host's next reboot (202 with settingsHeld saying why; its HostUpdatePolicy decides)",
        params: HostParamsSchema,
        body: HostFirmwareComponentsSpecSchema,
      },
    },
    async (req, reply) => {
      const updates = req.body.updates;
      const { host, components } = await read(req.params);
      const errors = firmwareUpdatesErrors(updates, components);
      if (errors.length > 0) throw new ApiError(400, 'InvalidRequest', `invalid firmware updates, nothing sent: ${formatFieldErrors(errors)}`, errors);
      if (host.status.provisioning.state === 'provisioned') {
        const held = await hold(req.params, host, 'firmware', updates.length > 0 ? { name: 'firmware', updates: updates as FirmwareUpdate[] } : undefined);
        return reply.status(held.firmwareHeld?.request.steps.some((s) => s.name === 'firmware') ? 202 : 200).send({ status: { components }, ...heldView(held) });
      }
      if (updates.length === 0) return reply.status(200).send({ status: { components }, applying: false });
      const cleaned = await hosts.clean(req.params, { steps: [{ name: 'firmware', updates: updates as FirmwareUpdate[] }] });
      return reply.status(202).send({ status: { components }, applying: true, cleanRequest: cleaned.cleanRequest });
    },
  );
}
