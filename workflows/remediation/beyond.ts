/**
 * A remediation's opt-in steps beyond Metal3, once the reboots have not
 * brought the host back: re-provision the same image through the host
 * workflow (deprovision, provision; its userData stays in the spec) and wait
 * for the host as after a reboot; if that fails too, deprovision and
 * re-inspect it and name what changed against the hardware recorded before.
 * Never Ironic: the host workflow (or its BareMetalHost) is asked what a
 * fleet's `deprovision`, `provision` and `reinspect` ask.
 */
import type { ActivityOptions } from '@temporalio/workflow';
import type { HardwareDetails, Image } from '../../model/host';
import { hardwareChanges } from '../../model/hardware-changes';
import type { createRemediationHostActivities } from '../../activities/remediation/host';
import type { createRemediationNodeActivities } from '../../activities/remediation/node';
import type { createRemediationReprovisionActivities, RemediationHostChange } from '../../activities/remediation/reprovision';
import type { RemediationInput, RemediationPhase, RemediationView } from '../../contracts/remediation';

export type RemediationActivities = ReturnType<typeof createRemediationHostActivities> &
  ReturnType<typeof createRemediationNodeActivities> &
  ReturnType<typeof createRemediationReprovisionActivities>;

/** An activity labelled for the UI, called with its arguments as an array. */
export type Act = <K extends keyof RemediationActivities>(
  name: K,
  summary: string,
  options?: ActivityOptions,
) => (args: Parameters<RemediationActivities[K]>) => ReturnType<RemediationActivities[K]>;

/** What the remediation workflow lends its later steps. */
export interface StepContext {
  v: RemediationView;
  input: RemediationInput;
  act: Act;
  step(text: string, phase?: RemediationPhase): void;
  publish(): Promise<void>;
  waiting(deadline: number): ActivityOptions;
  /** Waits for the host to be back as after a reboot (its Node Ready and restored, or, without one, powered on). */
  returned(since: string, deadline: number): Promise<boolean>;
  /** Set between a re-provision's deprovision and its provision: what a cancellation must give back. */
  imageTaken?: Image;
}

export type ReprovisionResult = { ok: true } | { ok: false; why: string; hardware?: HardwareDetails };

const now = (): string => new Date().toISOString();

/**
 * Asks the host for one change and waits for its result until `deadline`:
 * undefined when reached, else why not (never quoting the image's URL, which
 * may be pre-signed).
 */
export async function changeHost(x: StepContext, change: RemediationHostChange, summary: string, since: string, deadline: number): Promise<string | undefined> {
  const call = { ref: x.input.ref, change, since };
  const early = await x.act('changeHostForRemediation', summary)([call]);
  const result =
    early ?? (await x.act('awaitHostForRemediation', `wait for ${change.kind}`, x.waiting(deadline))([{ ...call, deadline: new Date(deadline).toISOString() }]));
  switch (result.outcome) {
    case 'succeeded':
      x.step(`${change.kind}: done`);
      return undefined;
    case 'failed':
      return `${change.kind} failed: ${result.error}`;
    case 'skipped':
      return `${change.kind} not possible: ${result.reason}`;
    case 'cancelled':
      return `${change.kind} cancelled: ${result.reason}`;
    case 'timedOut':
      return `${change.kind} not done in time (the host is ${result.state || 'busy'})`;
  }
}

/** Deprovision, provision the image the host ran, then wait for it as after a reboot. */
export async function reprovisionHost(x: StepContext): Promise<ReprovisionResult> {
  const { v, input } = x;
  const timeout = v.strategy.reprovision!.timeoutSeconds;
  x.step(`re-provision: deprovision, then provision the same image and userData (within ${timeout} s)`, 'Running');
  await x.publish();
  const found = await x.act('readHostImageAndHardware', 'read the image to re-provision')([input.ref]);
  const hardware = found.hardware;
  if (!found.image) return { ok: false, why: `the host runs no image (it is ${found.state}): nothing to re-provision`, hardware };
  const since = now();
  const deadline = Date.parse(since) + timeout * 1000;
  x.imageTaken = found.image;
  const down = await changeHost(x, { kind: 'deprovision' }, 'deprovision (re-provision)', since, deadline);
  if (down) return { ok: false, why: down, hardware };
  const up = await changeHost(x, { kind: 'provision', image: found.image }, 'provision the same image (re-provision)', since, deadline);
  x.imageTaken = undefined;
  if (up) return { ok: false, why: up, hardware };
  x.step('re-provisioned with the same image: waiting for the host as after a reboot', 'Waiting');
  await x.publish();
  const back = await x.returned(now(), Date.now() + v.strategy.timeoutSeconds * 1000);
  if (back) return { ok: true };
  const what = v.node ? `Node ${v.node.name} was not back` : 'the host did not power on';
  return { ok: false, why: `re-provisioned, but ${what} within ${v.strategy.timeoutSeconds} s`, hardware };
}

/**
 * After a failed re-provision: deprovision (the host is inspected only when
 * not provisioned), inspect again, and say what changed against `before`
 * (the hardware its last inspection recorded). The host is left available,
 * without an image: given up on, it waits for a person.
 */
export async function reinspectHost(x: StepContext, before: HardwareDetails | undefined): Promise<string> {
  const { v, input } = x;
  const timeout = v.strategy.reinspect!.timeoutSeconds;
  x.step(`re-inspect: deprovision, inspect, compare with the hardware recorded before (within ${timeout} s)`, 'Running');
  await x.publish();
  const since = now();
  const deadline = Date.parse(since) + timeout * 1000;
  const down = await changeHost(x, { kind: 'deprovision' }, 'deprovision (re-inspect)', since, deadline);
  if (down) return `re-inspection not possible: ${down}`;
  const inspected = await changeHost(x, { kind: 'reinspect' }, 're-inspect', since, deadline);
  if (inspected) return `re-inspection: ${inspected}`;
  const after = await x.act('readHostImageAndHardware', 'read the hardware found')([input.ref]);
  v.hardwareChanges = hardwareChanges(before, after.hardware);
  x.step(`re-inspected: ${v.hardwareChanges.length} change(s)`);
  return v.hardwareChanges.length > 0
    ? `re-inspection found: ${v.hardwareChanges.join('; ')}`
    : 're-inspection found no hardware change against the last inspection';
}
