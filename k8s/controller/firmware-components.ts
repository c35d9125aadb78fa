/**
 * HostFirmwareComponents in Kubernetes mode (driven by the firmware controller
 * in firmware-settings.ts, which reads Ironic once per host for both kinds):
 * `status.components` from Ironic's `GET …/firmware` (created for a host
 * whose Ironic reports components; a user's own is kept up to date as well),
 * `ChangeDetected` while `spec.updates` differs from the updates last handed
 * to the host (`status.updates`), `Valid` as BMO checks (component bios or
 * bmc, present in status where Ironic reports any) plus the `firmware` clean
 * step's own checks (an http(s) URL), a Warning Event per invalid update.
 * Valid updates become the host's `firmware` clean step; once the host
 * workflow has taken them they are `status.updates`.
 */
import type { KubeRest } from '../../clients/kubernetes/kube-rest';
import type { CleanStep, FirmwareUpdate } from '../../model/clean';
import { COMPONENTS, componentsFromIronic, firmwareUpdatesErrors, sameComponents, updatesChanged, type HostFirmwareComponentsSpec, type HostFirmwareComponentsStatus, type IronicFirmwareComponent } from '../../model/firmware-components';
import { firmwareConditions, sameConditions, type Condition, type ConditionWords } from '../../model/firmware-status';
import { formatFieldErrors, type FieldError } from '../../model/field-error';
import { Informer, watchPaths, type KubeObject } from './informer';
import type { BareMetalHost } from './bare-metal-host';

export interface HostFirmwareComponentsObject extends KubeObject {
  spec?: HostFirmwareComponentsSpec;
  status?: HostFirmwareComponentsStatus;
}

/** What one reconcile of a host's HostFirmwareComponents asks of the controller. */
export interface ComponentsOutcome {
  changeDetected: boolean;
  /** The `firmware` clean step to run, when valid updates are pending. */
  step?: CleanStep;
  /** Called once the host workflow took the step: the updates become status.updates. */
  handed: () => Promise<void>;
}

const WORDS: ConditionWords = { ok: 'OK', bad: 'InvalidComponent', message: (errors) => `Invalid Firmware Components: ${formatFieldErrors(errors)}` };

export interface ComponentsDeps {
  rest: KubeRest;
  /** The watched namespaces; every namespace when unset (METALFLOW_WATCH_NAMESPACE). */
  namespaces?: readonly string[];
  path: (namespace?: string, name?: string) => string;
  create: (host: BareMetalHost) => Promise<HostFirmwareComponentsObject | undefined>;
  warn: (obj: KubeObject, kind: string, errors: FieldError[], reported: boolean, prefix: string) => Promise<void>;
  /** A spec change (generation) or a new object: its host is reconciled. */
  changed: (key: string) => void;
  log: (message: string) => void;
}

export class FirmwareComponents {
  readonly informer: Informer<HostFirmwareComponentsObject>;

  constructor(private readonly deps: ComponentsDeps) {
    this.informer = new Informer<HostFirmwareComponentsObject>(deps.rest, watchPaths(deps.namespaces, (ns) => deps.path(ns)), deps.changed, { log: deps.log });
  }

  async reconcile(host: BareMetalHost, ironic: readonly IronicFirmwareComponent[]): Promise<ComponentsOutcome> {
    const key = `${host.metadata.namespace ?? ''}/${host.metadata.name}`;
    const none: ComponentsOutcome = { changeDetected: false, handed: async () => undefined };
    const components = componentsFromIronic(ironic);
    // Created for a host whose Ironic reports components, as BMO does for hosts that have them.
    const hfc = this.informer.cache.get(key) ?? (components.length > 0 ? await this.deps.create(host) : undefined);
    if (!hfc) return none;
    const updates = (hfc.spec?.updates ?? []) as FirmwareUpdate[];
    const changeDetected = updatesChanged(updates, hfc.status?.updates);
    const errors = changeDetected ? firmwareUpdatesErrors(updates, components) : [];
    const generation = hfc.metadata.generation ?? 0;
    const conditions = firmwareConditions(hfc.status?.conditions as Partial<Condition>[] | undefined, { changeDetected, errors }, generation, new Date().toISOString(), WORDS);
    // Each write answers with the object's new resourceVersion, which the next write needs.
    let current = hfc;
    const write = async (status: HostFirmwareComponentsStatus): Promise<void> => {
      const path = `${this.deps.path(hfc.metadata.namespace, hfc.metadata.name)}/status`;
      current = await this.deps.rest.call<HostFirmwareComponentsObject>('PUT', path, { body: { ...current, status: { ...status, lastUpdated: new Date().toISOString() } } });
      this.deps.log(`${key}: HostFirmwareComponents status: ${status.components?.length ?? 0} components, ${((status.conditions ?? []) as Partial<Condition>[]).map((c) => `${c.type}=${c.status}`).join(', ')}`);
    };
    const status: HostFirmwareComponentsStatus = { ...(hfc.status?.updates ? { updates: hfc.status.updates } : {}), components, conditions };
    // Written (and logged) only when it differs: the host is read every few minutes.
    if (!sameComponents(hfc.status?.components, components) || !sameConditions(hfc.status?.conditions as Partial<Condition>[] | undefined, conditions)) {
      await write(status);
    }
    await this.deps.warn(hfc, COMPONENTS.kind, errors, true, 'Invalid Firmware Components');
    if (!changeDetected || errors.length > 0) return { ...none, changeDetected };
    return {
      changeDetected,
      // An empty list asks nothing of the hardware: it is only recorded as handed over.
      ...(updates.length > 0 ? { step: { name: 'firmware', updates } } : {}),
      handed: () =>
        write({
          updates,
          components,
          conditions: firmwareConditions(conditions, { changeDetected: false, errors: [] }, generation, new Date().toISOString(), WORDS),
        }),
    };
  }
}
