/**
 * Manual cleaning: one named step (erase, RAID, BIOS) as one Ironic manual
 * clean (`clean` with its `clean_steps`, from `manageable`), waited out
 * through `cleaning`/`clean wait` on the shared node watcher. The node ends
 * `manageable`; the host's `prepare` then makes it available again.
 *
 * Servicing (a provisioned host, Ironic API 1.87): the same step as one
 * Ironic `service` with its `service_steps`, from `active`, waited out
 * through `servicing`/`service wait`; a `service failed` node is sent
 * Ironic's `abort`, which returns it to `active` (nothing half-changed in
 * Ironic's view), and the step fails with Ironic's reason.
 */
import type { CleanStep } from '../../model/clean';
import type { IronicClient } from '../../clients/ironic/client';
import type { IronicNode } from '../../clients/ironic/types';
import { biosSettings, ironicCleanSteps, raidConfigMatches, targetRaidConfig } from '../../clients/ironic/clean-steps';
import { activityContext } from '../common/activity-context';
import { SERVICE_MICROVERSION } from '../../clients/ironic/client';
import { ApplicationFailure } from '@temporalio/common';
import { firmwareSettingsErrors, schemaFromIronic, type IronicBiosSetting } from '../../model/firmware-settings';
import { formatFieldErrors } from '../../model/field-error';
import { ironicReason, operationFailed, summary, type NodeDriver, type NodeSummary, type NodeTarget } from './node-driver';

/** The fault Ironic records with the maintenance it sets when a service step fails. */
const SERVICE_FAULT = 'service failure';

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

  /** Why the step is skipped, read only before this attempt sent `verb` (a retry after it follows what it started). */
  async function skipReason(nodeId: string, step: CleanStep, verb: 'clean' | 'service'): Promise<string | undefined> {
    const started = ((activityContext()?.info.heartbeatDetails as { issued?: string[] } | undefined)?.issued ?? []).includes(verb);
    return started ? undefined : alreadyApplied(nodeId, step);
  }

  /** The step's Ironic steps, sent as `key`; Ironic's RAID step builds the node's target_raid_config: set it just before. */
  const sender = (nodeId: string, step: CleanStep, key: 'clean_steps' | 'service_steps') => async (): Promise<Record<string, unknown>> => {
    if (step.name === 'raid') await ironic.setTargetRaidConfig(nodeId, targetRaidConfig(step.raid));
    return { [key]: ironicCleanSteps(step) };
  };

  async function cleanNode(input: NodeTarget & { nodeId: string; step: CleanStep }): Promise<NodeSummary & { skipped?: string }> {
    const { nodeId, step } = input;
    const skipped = await skipReason(nodeId, step, 'clean');
    if (skipped) return { ...summary(await driver.mustGetNode(nodeId)), skipped };
    const send = sender(nodeId, step, 'clean_steps');
    const node = await driver.drive(nodeId, (n, issued) => {
      switch (n.provision_state) {
        case 'manageable':
          return issued.includes('clean') ? { done: true } : { verb: 'clean', prepare: send };
        case 'clean failed':
          // Left by an earlier attempt: manageable again, then this step's clean.
          if (!issued.includes('clean')) return { verb: 'manage' };
          // Ironic's own words: which step and why (it never puts BMC credentials in last_error or its history).
          return { failed: `clean step ${step.name} failed` };
        case 'available':
        case 'enroll':
        case 'inspect failed':
          return issued.includes('clean') ? { fail: `clean step ${step.name}: the node left cleaning for "${n.provision_state}"` } : { verb: 'manage' };
        default:
          return { fail: `cannot clean a node in Ironic state "${n.provision_state}"` };
      }
    });
    return summary(node);
  }

  async function serviceNode(input: NodeTarget & { nodeId: string; step: CleanStep }): Promise<NodeSummary & { skipped?: string }> {
    const { nodeId, step } = input;
    // Refused by name before anything is read or sent: an Ironic older than 1.87 has no servicing.
    await ironic.requireVersion(SERVICE_MICROVERSION, 'servicing a provisioned host (the service verb, Ironic 2023.2 / 23.0 or later)');
    const skipped = await skipReason(nodeId, step, 'service');
    if (skipped) return { ...summary(await driver.mustGetNode(nodeId)), skipped };
    let reason: string | undefined;
    let failed = false;
    let failedNode: IronicNode | undefined;
    const node = await driver.drive(nodeId, (n, issued) => {
      switch (n.provision_state) {
        case 'active':
          // `abort` is only ever sent after this step's service failed (a stale failure is serviced again instead).
          if (issued.includes('abort')) {
            failed = true;
            return { done: true };
          }
          return issued.includes('service') ? { done: true } : { verb: 'service', prepare: sender(nodeId, step, 'service_steps') };
        case 'service failed':
          // Left by an earlier operation: Ironic services again from here (as BMO restarts a failed servicing).
          if (!issued.includes('service')) return { verb: 'service', prepare: sender(nodeId, step, 'service_steps'), ownFault: SERVICE_FAULT };
          // Ours: keep Ironic's words, then `abort` takes the node back to active, as Ironic documents (after the
          // maintenance Ironic set for the failure is cleared, as BMO clears it: Ironic refuses an abort in maintenance).
          reason ??= n.last_error ?? undefined;
          failedNode ??= n;
          return { verb: 'abort', ownFault: SERVICE_FAULT };
        default:
          return { fail: `cannot service a node in Ironic state "${n.provision_state}" (servicing starts from active)` };
      }
    });
    if (failed) throw operationFailed(`service step ${step.name} failed: ${reason ?? (await ironicReason(ironic, failedNode ?? node))}; the node is active again`);
    return summary(node);
  }

  return { cleanNode, serviceNode };
}
