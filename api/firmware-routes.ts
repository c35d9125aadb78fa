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
 * Ironic is read on the worker (workflows/firmware-inventory.ts).
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { FirmwareReadError, readFirmwareInventory } from '../clients/temporal/firmware-inventory';
import { HostFirmwareSettingsSpecSchema, type SettingSchemas } from '../types/firmware-settings';
import { evaluateFirmwareSettings, firmwareConditions, firmwareSchemaName, firmwareSchemaOf, reportedSettings, type Condition } from '../types/firmware-status';
import { formatFieldErrors, type FieldError } from '../types/field-error';
import type { HostRef } from '../types/host';
import type { HostView } from '../workflows/definitions';
import { ApiError, type HostService } from './host-service';
import { HostParamsSchema } from './schemas';
import { componentsFromIronic, firmwareUpdatesErrors, HostFirmwareComponentsSpecSchema, type FirmwareComponentStatus } from '../types/firmware-components';
import type { FirmwareUpdate } from '../types/clean';

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
      inventory = await readFirmwareInventory(hosts.client, hosts.taskQueue, ref, { nodeId });
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

  /** The bios settings of the host's pending clean request: what it is being asked to have. */
  const pendingSettings = (host: HostView): Record<string, string> => {
    const step = host.cleanRequest?.request.steps.find((s) => s.name === 'bios');
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
      schema: {
        summary:
          "Metal3's HostFirmwareSettings spec.settings: checked against the BIOS registry Ironic reports (400 naming each refused setting, nothing sent); the settings that differ are applied as the host's bios clean step (an available host)",
        params: HostParamsSchema,
        body: HostFirmwareSettingsSpecSchema,
      },
    },
    async (req, reply) => {
      const desired = req.body.settings as Record<string, string | number>;
      const { view } = await read(req.params);
      const { changed, errors, ...shown } = view(desired);
      if (errors.length > 0) throw new ApiError(400, 'InvalidRequest', `invalid firmware settings, nothing sent: ${formatFieldErrors(errors)}`, errors);
      if (Object.keys(changed).length === 0) return reply.status(200).send({ ...shown, applying: false });
      const host = await hosts.clean(req.params, { steps: [{ name: 'bios', settings: changed }] });
      return reply.status(202).send({ ...shown, applying: true, cleanRequest: host.cleanRequest });
    },
  );

  app.get(
    '/v1/namespaces/:namespace/hosts/:name/firmware-components',
    { schema: { summary: "The host's firmware components (initial and current versions) as Ironic reports them, and the firmware updates its pending clean asks", params: HostParamsSchema } },
    async (req) => {
      const { host, components } = await read(req.params);
      const step = host.cleanRequest?.request.steps.find((s) => s.name === 'firmware');
      return { status: { components, ...(step?.name === 'firmware' ? { updates: step.updates } : {}) } };
    },
  );

  app.put(
    '/v1/namespaces/:namespace/hosts/:name/firmware-updates',
    {
      schema: {
        summary:
          "Metal3's HostFirmwareComponents spec.updates (component bios or bmc, an http(s) URL): checked (400 naming each refused update, nothing sent) and flashed in order as the host's firmware clean step (an available host)",
        params: HostParamsSchema,
        body: HostFirmwareComponentsSpecSchema,
      },
    },
    async (req, reply) => {
      const updates = req.body.updates;
      const { components } = await read(req.params);
      const errors = firmwareUpdatesErrors(updates, components);
      if (errors.length > 0) throw new ApiError(400, 'InvalidRequest', `invalid firmware updates, nothing sent: ${formatFieldErrors(errors)}`, errors);
      if (updates.length === 0) return reply.status(200).send({ status: { components }, applying: false });
      const host = await hosts.clean(req.params, { steps: [{ name: 'firmware', updates: updates as FirmwareUpdate[] }] });
      return reply.status(202).send({ status: { components }, applying: true, cleanRequest: host.cleanRequest });
    },
  );
}
