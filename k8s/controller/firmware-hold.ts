/**
 * HostFirmwareSettings / HostFirmwareComponents changes for a provisioned
 * host: handed to the host workflow as its held firmware change
 * (`holdFirmwareChange`, workflows/host/rules/firmware-held.ts), which services them at
 * the host's next reboot as its HostUpdatePolicy allows, as BMO's
 * doServiceIfNeeded does; a spec put back (no change left) withdraws it. The
 * updates a service flashed become the HostFirmwareComponents' status.updates.
 */
import { WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import type { CleanStep } from '../../model/clean';
import { hostWorkflowId } from '../../model/host-ref';
import { holdFirmwareChangeUpdate, hostViewQuery, type HostView } from '../../contracts/host';
import type { ComponentsOutcome } from './firmware-components';
import type { KubeObject } from './informer';

export interface HoldDeps {
  client: Client;
  log: (message: string) => void;
  /** An Event on the HostFirmwareSettings. */
  event: (obj: KubeObject, type: 'Normal' | 'Warning', reason: string, message: string) => Promise<void>;
}

const same = (a: unknown, b: unknown): boolean => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

/**
 * How much older than a service's end a firmware read must be to be trusted. A read taken before (or across) a
 * service reports what the hardware had before it: acting on it would hold the serviced change again and apply it
 * at the next reboot a second time. The margin covers the clocks of the worker and this controller.
 */
export const SERVICED_READ_MARGIN_MS = 10_000;

/** Whether a firmware read begun at `readAt` may predate the last service the host recorded. */
export const readPredatesService = (view: Pick<HostView, 'firmwareServiced'>, readAt: number): boolean =>
  view.firmwareServiced !== undefined && Date.parse(view.firmwareServiced.at) + SERVICED_READ_MARGIN_MS > readAt;

/**
 * `steps`: the valid changes of the firmware read begun at `readAt` (firmware first, then bios); none withdraws what
 * the host holds. 'stale': that read may predate the host's last service, nothing was done; read again.
 */
export async function holdForServicing(deps: HoldDeps, hfs: KubeObject, steps: CleanStep[], components: ComponentsOutcome, readAt: number): Promise<'stale' | undefined> {
  const ref = { namespace: hfs.metadata.namespace ?? '', name: hfs.metadata.name };
  const handle = deps.client.workflow.getHandle(hostWorkflowId(ref));
  const view: HostView = await handle.query(hostViewQuery);
  // The host moved on (deprovisioning, …) since the informer saw it: its next state brings it back here.
  if (view.status.provisioning.state !== 'provisioned') return undefined;
  if (readPredatesService(view, readAt)) {
    deps.log(`${ref.namespace}/${ref.name}: firmware read begun before the last service ended (${view.firmwareServiced?.at}): not acted on; read again`);
    return 'stale';
  }
  const held = view.firmwareHeld?.request.steps ?? [];
  const images = steps.find((step) => step.name === 'firmware');
  let wanted = steps;
  // Updates the last service flashed (and no longer held) are done: status.updates, not held again.
  if (images?.name === 'firmware' && !held.some((step) => step.name === 'firmware') && same(view.firmwareServiced?.updates, images.updates)) {
    await components.handed();
    wanted = steps.filter((step) => step !== images);
  } else if (components.changeDetected && !components.step) {
    // No updates asked (the list emptied): nothing for the hardware, recorded as handed over.
    await components.handed();
  }
  if (same(wanted, held)) return undefined;
  let reason: string | undefined;
  try {
    const result = await handle.executeUpdate(holdFirmwareChangeUpdate, { args: [wanted.length > 0 ? { steps: wanted } : null] });
    reason = result.reason;
  } catch (err) {
    // Refused (the host moved on between the query and the update, or its run predates the update): read again later.
    if (err instanceof WorkflowUpdateFailedError) {
      deps.log(`${ref.namespace}/${ref.name}: firmware change not held now: ${err.cause?.message ?? err.message}`);
      return undefined;
    }
    throw err;
  }
  if (wanted.length === 0) {
    deps.log(`${ref.namespace}/${ref.name}: the held firmware change was withdrawn (nothing differs any more)`);
    await deps.event(hfs, 'Normal', 'SettingsWithdrawn', 'the firmware change held for servicing was withdrawn: the spec asks nothing Ironic does not report');
    return undefined;
  }
  const message = reason ?? 'held for servicing at the host\'s next reboot';
  deps.log(`${ref.namespace}/${ref.name}: firmware change held: ${message}`);
  await deps.event(hfs, 'Normal', 'SettingsHeld', message);
  return undefined;
}
