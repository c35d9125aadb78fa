/**
 * A manual clean of a `spec.provisioner: direct` host:
 * the steps metalflow can run itself over Redfish, in order, each its own
 * activity so the Temporal UI shows which step runs and which failed
 * (`<seq>-clean: applyBmcBios bios`, `<seq>-clean: updateBmcFirmware firmware bmc`).
 *
 * - `bios`: the settings (Metal3's `spec.firmware` flags by the iDRAC names,
 *   and/or the BMC's own names) go pending in the BIOS SettingsObject, the
 *   host reboots and the BIOS is read back; a BIOS that already has them is
 *   left alone (no reboot).
 * - `firmware`: each image through UpdateService.SimpleUpdate, its task
 *   followed to the end, sent at most once however its activity is retried
 *   (a component already at the update's `version` is not flashed); the
 *   component's version before and after is recorded in the operation's note.
 * Other steps (erase, RAID) need Ironic's agent; the request validator
 * refuses them for direct hosts before anything runs.
 */
import { ApplicationFailure, CancellationScope, CancelledFailure, proxyActivities } from '@temporalio/workflow';
import { ACTIVITY_OPTIONS } from '../../common/activity-options';
import type { BmcActivities, BmcTarget } from '../../../activities/bmc/activities';
import type { CleanStep } from '../../../model/clean';
import { FAILURE } from '../../../model/failures';
import { required } from '../operation-common';
import { operationLabel } from '../operation-label';
import type { OperationInput, OperationOutcome } from '../operation-types';

const OPTIONS = ACTIVITY_OPTIONS.bmcTask;
const bmc = proxyActivities<Pick<BmcActivities, 'applyBmcBios' | 'updateBmcFirmware'>>(OPTIONS);

/** Runs one named step; returns what the record's note says of it. */
async function runStep(t: BmcTarget, step: CleanStep, label: string): Promise<{ note: string; poweredOn?: boolean }> {
  switch (step.name) {
    case 'bios': {
      const { firmware, settings } = step;
      const r = await bmc.applyBmcBios.executeWithOptions({ ...OPTIONS, summary: `${label}: applyBmcBios bios` }, [{ ...t, bios: { firmware, settings } }]);
      const note = r.changed.length === 0 ? 'bios skipped (the BIOS already has these settings)' : `bios (${r.changed.join(', ')} applied by a reboot)`;
      return { note, poweredOn: r.poweredOn };
    }
    case 'firmware': {
      const done: string[] = [];
      for (const update of step.updates) {
        const r = await bmc.updateBmcFirmware.executeWithOptions({ ...OPTIONS, summary: `${label}: updateBmcFirmware firmware ${update.component}` }, [
          { ...t, component: update.component, url: update.url, ...(update.version !== undefined ? { version: update.version } : {}) },
        ]);
        done.push(r.skipped ? `${r.component} already ${r.after ?? 'unknown'}, not flashed` : `${r.component} ${r.before ?? 'unknown'} → ${r.after ?? 'unknown'}`);
      }
      return { note: `firmware (${done.join(', ')})` };
    }
    default:
      // The validator refuses these for direct hosts; a request stored by other code would end here.
      throw ApplicationFailure.create({
        type: FAILURE.operationFailed,
        nonRetryable: true,
        message: `clean step ${step.name} needs Ironic; spec.provisioner direct runs only bios and firmware`,
      });
  }
}

export async function directClean(input: OperationInput, progress?: (step: string) => void): Promise<OperationOutcome> {
  const { steps } = required(input.clean, 'a clean request');
  const t: BmcTarget = { ref: input.ref, spec: required(input.spec, 'a spec') };
  const label = operationLabel() ?? 'clean';
  const ran: string[] = [];
  let poweredOn: boolean | undefined;
  for (const step of steps) {
    if (CancellationScope.current().consideredCancelled) throw new CancelledFailure(`the clean was cancelled before step ${step.name}`);
    progress?.(step.name);
    const r = await runStep(t, step, label);
    if (r.poweredOn !== undefined) poweredOn = r.poweredOn;
    ran.push(r.note);
  }
  return { ...(poweredOn !== undefined ? { poweredOn } : {}), note: `clean steps: ${ran.join(', ')}` };
}
