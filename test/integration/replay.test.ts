/**
 * Replays recorded histories (test/fixtures/histories) against the current
 * workflow code: a change that breaks determinism for running hosts fails here.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Worker } from '@temporalio/worker';
import { REPO_ROOT } from '../../config/env';
import { WORKFLOW_BUNDLE_PATH } from '../support/env';

const DIR = join(REPO_ROOT, 'test', 'fixtures', 'histories');
const files = readdirSync(DIR).filter((f) => f.endsWith('.json'));

describe('replay of recorded histories', () => {
  it('has recorded histories of the host workflow and every operation run in the lifecycle', () => {
    expect(files).toContain('host-lifecycle.json');
    for (const op of ['enroll', 'inspect', 'prepare', 'provision', 'deprovision', 'power', 'delete']) {
      expect(files).toContain(`operation-${op}.json`);
    }
    // Power checks, a mismatch corrected, a reboot, a keyed power-off (test/support/record-power-histories.ts).
    expect(files).toContain('host-power.json');
    expect(files).toContain('operation-reboot.json');
    // A failing host continued as new from its backoff, and the run after it (test/support/record-failure-histories.ts).
    expect(files).toContain('host-failure-continue-as-new-run1.json');
    expect(files).toContain('host-failure-continue-as-new-run2.json');
    // The same, handed over by the run's own count of its history (patch counted-history; record-failure-histories.ts
    // -counted-history), and its idle checks (record-power-histories.ts -counted-history).
    // A fleet handed over by its own count (patch fleet-counted-history; record-fleet-histories.ts -counted-history).
    for (const f of [
      'host-failure-continue-as-new-counted-history-run1',
      'host-failure-continue-as-new-counted-history-run2',
      'host-power-counted-history',
      'fleet-reboot-continued-counted-history-run1',
      'fleet-reboot-continued-counted-history-last',
      // The idle wait fenced by a local activity after each fire, its next timer last (patch fire-fence;
      // record-power-histories.ts / record-dhcp-histories.ts -fire-fence).
      'host-power-fire-fence',
      'host-dhcp-reservation-fire-fence',
      'host-dhcp-pool-provision-fire-fence',
      // The same era's count takes a timer's events when it fires (history-count.ts; record-failure-histories.ts -fire-fence).
      'host-failure-continue-as-new-fire-fence-run1',
      'host-failure-continue-as-new-fire-fence-run2',
      // Idle timers cancelled by reboots until the count hands over (record-cancelled-timer-histories.ts -fire-fence).
      'host-cancelled-timers-fire-fence-run1',
      // A host told by the power sentinel's signal that its node changed power (patch power-signal; record-power-signal-histories.ts).
      'host-power-signal',
      // Era bounded-history (record-bounded-history-histories.ts): handed over with a status write unfinished, and the run
      // that writes it first; handed over by the bytes written, waiting for its spec and from an error backoff.
      'host-bounded-history-outbox-run1',
      'host-bounded-history-outbox-run2',
      'host-bounded-history-bytes-run1',
      'host-bounded-history-bytes-backoff-run1',
    ]) {
      expect(files).toContain(`${f}.json`);
    }
    // A failing host that backs off and recovers within one run (test/support/record-recovery-histories.ts).
    expect(files).toContain('host-failure-backoff-recovery.json');
    // A stuck deploy cancelled by a pause, then a delete held until resumed (test/support/record-interrupt-histories.ts).
    expect(files).toContain('host-paused-cancel-delete.json');
    expect(files).toContain('operation-provision-cancelled.json');
    // The same once the cancelled wait must have stopped before Ironic is settled (patch settle-after-wait-stopped).
    expect(files).toContain('host-paused-cancel-delete-settle-after-wait-stopped.json');
    expect(files).toContain('operation-provision-cancelled-settle-after-wait-stopped.json');
    // Status written to its BareMetalHost in the background (test/support/record-kube-status-histories.ts).
    expect(files).toContain('host-kubernetes-status.json');
    // A `provisioner: direct` host and each direct operation (test/support/record-direct-histories.ts).
    expect(files).toContain('host-direct-provisioner.json');
    for (const op of ['enroll', 'inspect', 'prepare', 'power', 'provision', 'deprovision', 'delete']) {
      expect(files).toContain(`operation-direct-${op}.json`);
    }
    // A manual clean failed in Ironic, retried, corrected and done (patch manual-clean, test/support/record-clean-histories.ts).
    expect(files).toContain('host-manual-clean.json');
    // Detached, then attached again by adoption (test/support/record-detach-histories.ts).
    expect(files).toContain('host-detach-reattach-adopt.json');
    expect(files).toContain('operation-detach.json');
    expect(files).toContain('operation-enroll-adopt.json');
    // A delete refused once by Ironic, then retried (test/support/record-delete-failure-histories.ts).
    expect(files).toContain('host-delete-failed-then-deleted.json');
    expect(files).toContain('operation-delete-failed.json');
    // Specs accepted before stricter input rules (raid, firmware, customDeploy, a 10,000-character description), test/support/record-input-histories.ts.
    expect(files).toContain('host-spec-refused-by-later-rules.json');
    // A direct host's detach before and after patch direct-detach-without-ironic (test/support/record-direct-detach-histories.ts).
    expect(files).toContain('operation-detach-direct-v1.json');
    expect(files).toContain('operation-detach-direct-without-ironic.json');
    // A BMC-owned host's power checks before and after patch bmc-power-check-activity (test/support/record-bmc-power-check-histories.ts).
    expect(files).toContain('host-bmc-power-check-v1.json');
    expect(files).toContain('host-bmc-power-check-activity.json');
    // Ironic lost the node: noticed by an operation and by the power check (test/support/record-node-lost-histories.ts).
    expect(files).toContain('host-node-lost-operation.json');
    expect(files).toContain('host-node-lost-power-check.json');
    // Power changes and reboots through Ironic after patch ironic-power-quiet-retry (record-power-histories.ts -ironic-power-quiet-retry).
    for (const f of ['host-power', 'operation-reboot', 'operation-power']) expect(files).toContain(`${f}-ironic-power-quiet-retry.json`);
    // A reboot with a request id, sent again after it ran (patch reboot-request-ids; record-power-histories.ts -reboot-request-ids).
    for (const f of ['host-power', 'operation-reboot', 'operation-power']) expect(files).toContain(`${f}-reboot-request-ids.json`);
    // A host with metadata.labels (patch host-labels), and fleet operations: continued as new with hosts in flight, and cancelled (test/support/record-fleet-histories.ts).
    for (const f of ['host-labels-v1', 'fleet-reboot-continued-v1-run1', 'fleet-reboot-continued-v1-last', 'fleet-poweroff-cancelled-v1']) expect(files).toContain(`${f}.json`);
    // A host with its uid, the config drive's meta_data.uuid (patch host-uid; record-histories.ts -host-uid).
    for (const f of ['host-lifecycle', 'operation-provision']) expect(files).toContain(`${f}-host-uid.json`);
    // A host registered again while available, with its Events (patch registration-events; record-kube-status-histories.ts -registration-events).
    expect(files).toContain('host-kubernetes-status-registration-events.json');
    // Operations inside the host workflow (patch operations-inline, taken first in a run; every older patch without a marker):
    // the lifecycle, a pause cancelling a stuck deploy, the power paths, a direct host (record-*-histories.ts -operations-inline).
    for (const f of ['host-lifecycle', 'host-paused-cancel-delete', 'host-power', 'host-direct-provisioner']) expect(files).toContain(`${f}-operations-inline.json`);
    // The image check before a deploy (patch image-probe): the lifecycle just before it (record-histories.ts -before-image-probe),
    // and a host whose image was not found, then provisioned from a checksum-file URL (record-image-histories.ts).
    expect(files).toContain('host-lifecycle-before-image-probe.json');
    expect(files).toContain('host-image-probe.json');
    // A delete whose power off kept failing (patch delete-gives-up): retried until it worked before the patch,
    // given up after Metal3's retry count with it (record-delete-gives-up-histories.ts old|new).
    expect(files).toContain('host-delete-power-off-retried-v1.json');
    expect(files).toContain('host-delete-gives-up.json');
    // A provisioned host given an image with another URL (patch metal3-transitions): ignored before the patch,
    // deprovisioned and provisioned again with it (record-metal3-transitions-histories.ts old|new).
    expect(files).toContain('host-image-url-change-ignored-v1.json');
    expect(files).toContain('host-image-url-change-reprovisions.json');
    // An API-mode remediation: the power cycle through a keyed power-off request (test/support/record-remediation-histories.ts).
    expect(files).toContain('remediation-api-power-cycle-v1.json');
    // A remediation of a disablePowerOff host (patch remediation-disable-power-off-reboot): refused before it, rebooted with it.
    for (const f of ['remediation-disable-power-off-refused-v1', 'remediation-disable-power-off-reboots-v1']) expect(files).toContain(`${f}.json`);
    // A remediation re-provisioning after a failed reboot (patch remediation-reprovision; older runs never reach the marker:
    // the step is opt-in, so remediation-api-power-cycle-v1 and the two above are its old shape).
    expect(files).toContain('remediation-reprovision-v1.json');
    // Fleet remediate (patch fleet-remediate): refused as invalid input before it, a remediation per host with it (record-fleet-remediate-histories.ts old|new).
    for (const f of ['fleet-remediate-refused-v1', 'fleet-remediate-v1']) expect(files).toContain(`${f}.json`);
    // Fleet waves paused after each wave, and a cancel with abortInFlight stopping stuck deploys (patch fleet-waves; record-fleet-waves-histories.ts).
    for (const f of ['fleet-waves-paused-v1', 'fleet-cancel-abort-in-flight-v1']) expect(files).toContain(`${f}.json`);
    // The code just before patch fleet-waves (record-fleet-histories.ts -before-fleet-waves): fleet runs without its marker.
    // A pivot A → B on two real planes: six hosts moved, one skipped at pre-check, one rolled back (test/k8s/pivot.test.ts with METALFLOW_RECORD_PIVOT_FIXTURE).
    expect(files).toContain('pivot-a-to-b-v1.json');
    for (const f of ['fleet-reboot-continued-before-fleet-waves-run1', 'fleet-reboot-continued-before-fleet-waves-last', 'fleet-poweroff-cancelled-before-fleet-waves', 'host-labels-before-fleet-waves']) expect(files).toContain(`${f}.json`);
    // The provisioning limit (patch provisioning-limit): the lifecycle just before it (record-histories.ts -before-provisioning-limit
    // on the code before), and with it a host that waited delayed for each permit, and the limiter's run (record-limit-histories.ts).
    for (const f of ['host-lifecycle-before-provisioning-limit', 'host-provisioning-limit-delayed', 'provisioning-limiter']) expect(files).toContain(`${f}.json`);
    // A host waiting long for a permit through many updates (record-permit-histories.ts old|new): in one run past its
    // history threshold before patch permit-continue-as-new; with it, continued as new while waiting (its first run,
    // the run the grant came to) and the limiter granting to the host's current run.
    for (const f of ['host-permit-long-wait-before-continue-as-new', 'host-permit-wait-continued-run1', 'host-permit-wait-continued-granted', 'provisioning-limiter-continued-holder']) expect(files).toContain(`${f}.json`);
    // IP pools (record-ipam-histories.ts): a lifecycle with a full pool, release and reuse, delete; a run continued as new with its table.
    for (const f of ['ippool-lifecycle-v1', 'ippool-continued-v1-run1']) expect(files).toContain(`${f}.json`);
    // spec.online false: a hard power off before patch soft-power-off, a soft one with it (record-soft-power-off-histories.ts old|new).
    for (const f of ['host-online-false-before-soft-power-off', 'host-online-false-soft-power-off']) expect(files).toContain(`${f}.json`);
    // Fleet reinspect, detach, attach (patch fleet-inspect-detach): refused as invalid input by the code before, and run with it (record-fleet-inspect-detach-histories.ts old|new).
    for (const f of ['fleet-reinspect-refused-v1', 'fleet-reinspect-v1', 'fleet-detach-v1', 'fleet-attach-v1']) expect(files).toContain(`${f}.json`);
    // Automated cleaning moved from preparing to provisioning, as BMO (patch bmo-cleaning-placement): the lifecycle
    // before it, whose prepare ran Ironic's provide (record-histories.ts -before-bmo-cleaning on the code before), and with it.
    for (const f of ['host-lifecycle-before-bmo-cleaning', 'host-lifecycle-bmo-cleaning']) expect(files).toContain(`${f}.json`);
    // A failed deploy (patch provisioning-fail-count): retried in provisioning before the patch, deprovisioned, counted
    // and stopped at the retry limit with it (record-provisioning-retries-histories.ts old|new).
    for (const f of ['host-failed-deploy-retried-in-place-v1', 'host-failed-deploy-deprovisions-retry-limit']) expect(files).toContain(`${f}.json`);
    // A provisioned host's customDeploy.method changed (patch custom-deploy-change): ignored before the patch, deprovisioned
    // and provisioned again with it (record-custom-deploy-change-histories.ts old|new).
    for (const f of ['host-custom-deploy-change-ignored-v1', 'host-custom-deploy-change-reprovisions']) expect(files).toContain(`${f}.json`);
    // spec.disablePowerOff set on an available host (patch disable-power-off-node): nothing on the node before the patch,
    // registered again (the node's disable_power_off) with it (record-disable-power-off-histories.ts old|new).
    for (const f of ['host-disable-power-off-workflow-only-v1', 'host-disable-power-off-on-node']) expect(files).toContain(`${f}.json`);
    // A keyed power-off request on a disablePowerOff host (patch disable-power-off-reboot): refused before the patch,
    // one reboot with it (record-disable-power-off-reboot-histories.ts old|new).
    for (const f of ['host-disable-power-off-key-refused-v1', 'host-disable-power-off-key-reboots']) expect(files).toContain(`${f}.json`);
    // A fleet continued as new with its state packed (patch fleet-packed-carry; record-fleet-histories.ts -packed-carry):
    // the old shape, which carried the state as it was, is fleet-reboot-continued-v1-run1/-last above.
    for (const f of ['fleet-reboot-continued-packed-carry-run1', 'fleet-reboot-continued-packed-carry-last']) expect(files).toContain(`${f}.json`);
    // A fleet whose progress is over its size limit answers its first page to updates and at its end (patch
    // fleet-bounded-results; record-fleet-paged-history.ts); every fleet fixture above is the old shape (under the limit).
    expect(files).toContain('fleet-reboot-paged-results.json');
    // spec.raid / spec.firmware (patch spec-raid-firmware): refused before the patch (and, in an earlier era, accepted and
    // ignored: host-spec-refused-by-later-rules.json), applied as clean steps while preparing with it (record-spec-settings-histories.ts old|new).
    for (const f of ['host-spec-settings-refused-v1', 'host-spec-settings-applied', 'host-spec-refused-by-later-rules']) expect(files).toContain(`${f}.json`);
    // One era patch for every patch before it, the permit asked by a local activity (patch fewer-events, issue 17;
    // record-histories.ts -fewer-events, record-limit-histories.ts -fewer-events with a limit of 1). The shape before it,
    // operations-inline's marker then one marker per later patch and the permit as an activity: host-lifecycle-bmo-cleaning,
    // host-failed-deploy-deprovisions-retry-limit, host-dhcp-reservation, host-provisioning-limit-delayed.
    for (const f of ['host-lifecycle-fewer-events', 'host-provisioning-limit-delayed-fewer-events', 'provisioning-limiter-fewer-events']) expect(files).toContain(`${f}.json`);
    // spec.dhcp (patch dhcp-reservations): a host recorded just before it, one with a fixed address and lease checks, one with a pool address provisioned (test/support/record-dhcp-histories.ts).
    for (const f of ['host-lifecycle-before-dhcp-reservations', 'host-dhcp-reservation', 'host-dhcp-pool-provision']) expect(files).toContain(`${f}.json`);
    // HostFirmwareSettings / HostFirmwareComponents changes on a provisioned host (patch firmware-servicing): a host with a
    // HostUpdatePolicy rebooted with nothing held (the code before, when such a change waited outside the workflow), and one
    // whose held change is serviced at the reboot, then another held and withdrawn (record-firmware-servicing-histories.ts old|new).
    for (const f of ['host-firmware-change-waits-v1', 'host-firmware-change-serviced']) expect(files).toContain(`${f}.json`);
    // A held change dropped by a deprovision, and taken as the available host's clean (patch held-firmware-kept;
    // record-firmware-servicing-histories.ts held-old|held-new).
    for (const f of ['host-firmware-held-deprovisioned-v1', 'host-firmware-held-kept']) expect(files).toContain(`${f}.json`);
  });

  it.each(files)('%s replays without nondeterminism', async (file) => {
    // runReplayHistory parses the CLI's proto-JSON itself.
    const history: unknown = JSON.parse(readFileSync(join(DIR, file), 'utf8'));
    await expect(
      Worker.runReplayHistory({ workflowBundle: { codePath: WORKFLOW_BUNDLE_PATH }, replayName: file }, history),
    ).resolves.toBeUndefined();
  });
});
