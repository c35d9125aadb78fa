/**
 * Manual cleaning: one named step (erase, RAID, BIOS) as one Ironic manual
 * clean (`clean` with its `clean_steps`, from `manageable`), waited out
 * through `cleaning`/`clean wait` on the shared node watcher. The node ends
 * `manageable`; the host's `prepare` then makes it available again.
 */
import type { CleanStep } from '../types/clean';
import type { IronicClient } from '../clients/ironic/client';
import { biosSettings, ironicCleanSteps, raidConfigMatches, targetRaidConfig } from '../clients/ironic/clean-steps';
import { activityContext } from './activity-context';
import { ApplicationFailure } from '@temporalio/common';
import { firmwareSettingsErrors, schemaFromIronic, type IronicBiosSetting } from '../types/firmware-settings';
import { formatFieldErrors } from '../types/field-error';
import { lastError, operationFailed, summary, type NodeDriver, type NodeSummary, type NodeTarget } from './ironic-node-driver';

export interface CleanDeps {
  ironic: IronicClient;
  driver: NodeDriver;
}

/**
 * BIOS settings checked against Ironic's BIOS registry before any clean is sent (FirmwareSchema's rules):
 * a name the registry lacks, a read-only setting, a value outside its limits or allowable values is
 * a non-retryable failure naming the setting. Only where Ironic has a registry (some setting has a
 * type): a BMC without one (fake-hardware's bios interface by default) reports names and values only.
 */
function checkAgainstRegistry(registry: IronicBiosSetting[], wanted: { name: string; value: string }[]): void {
  if (!registry.some((s) => s.attribute_type)) return;
  const errors = firmwareSettingsErrors(Object.fromEntries(wanted.map((s) => [s.name, s.value])), schemaFromIronic(registry), 'settings');
  if (errors.length > 0) throw ApplicationFailure.nonRetryable(`BIOS settings refused by the host's BIOS registry, nothing sent: ${formatFieldErrors(errors)}`, 'InvalidSettings');
}

export function createCleanActivities(deps: CleanDeps) {
  const { ironic, driver } = deps;

  /**
   * Why the step changes nothing and is skipped (no clean, no reboot), or undefined: a bios step whose
   * every setting Ironic already reports with that value, a raid step whose volumes the node's
   * raid_config already has.
   */
  async function alreadyApplied(nodeId: string, step: CleanStep): Promise<string | undefined> {
    if (step.name === 'bios') {
      const registry = await ironic.getBiosRegistry(nodeId);
      const wanted = biosSettings(step);
      checkAgainstRegistry(registry, wanted);
      const current = new Map(registry.map((b) => [b.name, b.value]));
      return wanted.every(({ name, value }) => current.get(name) === value) ? 'the BIOS already has these settings' : undefined;
    }
    if (step.name === 'raid') {
      const node = await driver.mustGetNode(nodeId);
      return raidConfigMatches(node.raid_config, targetRaidConfig(step.raid)) ? "the node's raid_config already has these volumes" : undefined;
    }
    return undefined;
  }

  async function cleanNode(input: NodeTarget & { nodeId: string; step: CleanStep }): Promise<NodeSummary & { skipped?: string }> {
    const { nodeId, step } = input;
    const clean_steps = ironicCleanSteps(step);
    // Only before this attempt sent anything: a retry after the verb went out follows the clean it started.
    const started = ((activityContext()?.info.heartbeatDetails as { issued?: string[] } | undefined)?.issued ?? []).includes('clean');
    const skipped = started ? undefined : await alreadyApplied(nodeId, step);
    if (skipped) return { ...summary(await driver.mustGetNode(nodeId)), skipped };
    const send = async (): Promise<Record<string, unknown>> => {
      // Ironic's RAID clean step builds the node's target_raid_config: set it just before.
      if (step.name === 'raid') await ironic.setTargetRaidConfig(nodeId, targetRaidConfig(step.raid));
      return { clean_steps };
    };
    let reasonCleared = false;
    const node = await driver.drive(nodeId, (n, issued) => {
      switch (n.provision_state) {
        case 'manageable':
          return issued.includes('clean') ? { done: true } : { verb: 'clean', prepare: send };
        case 'clean failed':
          // Left by an earlier attempt: manageable again, then this step's clean.
          if (!issued.includes('clean')) return { verb: 'manage' };
          // Ironic's own words: which step and why (it never puts BMC credentials in last_error).
          if (n.last_error) return { fail: `clean step ${step.name} failed: ${lastError(n)}` };
          // Read late (a retry after a worker died): Ironic's power sync has cleared last_error; its history has it.
          reasonCleared = true;
          return { done: true };
        case 'available':
        case 'enroll':
        case 'inspect failed':
          return issued.includes('clean') ? { fail: `clean step ${step.name}: the node left cleaning for "${n.provision_state}"` } : { verb: 'manage' };
        default:
          return { fail: `cannot clean a node in Ironic state "${n.provision_state}"` };
      }
    });
    if (reasonCleared) throw operationFailed(`clean step ${step.name} failed: ${await historyError(nodeId)}`);
    return summary(node);
  }

  /** The newest error in the node's history, where Ironic keeps it after last_error is cleared. */
  async function historyError(nodeId: string): Promise<string> {
    const errors = (await ironic.getNodeHistory(nodeId)).filter((e) => e.severity === 'ERROR');
    return errors.sort((a, b) => a.created_at.localeCompare(b.created_at)).at(-1)?.event ?? 'no reason given by Ironic';
  }

  return { cleanNode };
}
