/**
 * One remediation of one host, with CAPM3's reboot strategy: power the host
 * off hard through its host workflow (a keyed power-off request this
 * remediation owns, so it never races the host's own operations), and only
 * once the host reports off, take the Node's workloads away (out-of-service
 * taint, or labels and annotations backed up and the Node deleted); release
 * the request; wait for the same machine's Node to come back; put its labels
 * back once; retry up to retryLimit; give up by marking the host unhealthy.
 * Every wait is inside an activity (heartbeats, no history), so a run's
 * history is bounded by its attempts. Each step is an activity with a
 * summary and the workflow's current details say where it stands.
 */
import { ApplicationFailure, CancellationScope, isCancellation, log, proxyActivities, setCurrentDetails, setHandler, workflowInfo, type ActivityOptions } from '@temporalio/workflow';
import { MAX_RETRY_LIMIT, strategyPairingError } from '../../model/remediation';
import { ACTIVITY_OPTIONS } from '../common/activity-options';
import { reinspectHost, reprovisionHost, type Act, type RemediationActivities, type StepContext } from './beyond';
import {
  initialRemediationView,
  remediationQuery,
  type RemediationInput,
  type RemediationPhase,
  type RemediationView,
} from '../../contracts/remediation';

type Activities = RemediationActivities;

const QUICK: ActivityOptions = ACTIVITY_OPTIONS.remediationCall;
const quick = proxyActivities<Activities>(QUICK);
const MAX_STEPS = 40;

const now = (): string => new Date().toISOString();

/** A waiting activity: heartbeats, so a dead worker is noticed in 30 s and the wait resumes on another. */
const waiting = ACTIVITY_OPTIONS.remediationWait;

export async function remediateWorkflow(input: RemediationInput): Promise<RemediationView> {
  const v = initialRemediationView(input);
  setHandler(remediationQuery, () => v);
  const { ref, kubernetes } = input;
  const key = v.powerOffKey;
  const host = `${ref.namespace}/${ref.name}`;
  let held = false;
  let tainted = false;

  /** Records a step: the query's steps, the UI's current details, the log. */
  const step = (text: string, phase?: RemediationPhase): void => {
    if (phase) v.phase = phase;
    v.steps = [...v.steps, { at: now(), step: text }].slice(-MAX_STEPS);
    setCurrentDetails(`**${v.phase}** (attempt ${v.retryCount} of ${v.strategy.retryLimit}): ${text}`);
    log.info(`remediation of ${host}: ${text}`);
  };
  /** An activity labelled for the UI: `<attempt>-remediate: <what>`. */
  const act: Act = <K extends keyof Activities>(name: K, summary: string, options: ActivityOptions = QUICK) =>
    (proxyActivities<Activities>(options)[name] as unknown as { executeWithOptions(o: ActivityOptions, a: Parameters<Activities[K]>): ReturnType<Activities[K]> }).executeWithOptions.bind(
      undefined,
      { ...options, summary: `${v.retryCount}-remediate: ${summary}` },
    );
  /** A HostRemediation's status follows the phases (Kubernetes mode); the steps are in the query and the UI. */
  const publish = async (): Promise<void> => {
    if (!input.resource) return;
    const { phase, retryCount, lastRemediated, outcome, message } = v;
    const status = { phase, retryCount, outcome, workflowId: workflowInfo().workflowId, ...(lastRemediated ? { lastRemediated } : {}), ...(message ? { message: message.slice(0, 4000) } : {}) };
    await act('publishRemediationStatus', `status: ${phase}`)([{ namespace: ref.namespace, name: input.resource.name, status }]);
  };
  const end = async (outcome: RemediationView['outcome'], message: string, phase?: RemediationPhase): Promise<RemediationView> => {
    v.outcome = outcome;
    v.message = message;
    step(message, phase);
    await publish();
    return v;
  };

  // A start that bypassed the API (temporal workflow start) fails at once, naming the field; shorter timeouts are let through (tests).
  const { type, retryLimit, timeoutSeconds, reprovision, reinspect } = input.request.strategy;
  if (type !== 'Reboot') throw ApplicationFailure.nonRetryable(`strategy.type: ${JSON.stringify(type)} is not a strategy; use "Reboot"`, 'InvalidRequest');
  if (retryLimit !== undefined && !(Number.isInteger(retryLimit) && retryLimit >= 1 && retryLimit <= MAX_RETRY_LIMIT)) {
    throw ApplicationFailure.nonRetryable(`strategy.retryLimit: must be an integer from 1 to ${MAX_RETRY_LIMIT}`, 'InvalidRequest');
  }
  if (timeoutSeconds !== undefined && !(timeoutSeconds > 0)) throw ApplicationFailure.nonRetryable('strategy.timeoutSeconds: must be positive', 'InvalidRequest');
  for (const [field, opt] of [['reprovision', reprovision], ['reinspect', reinspect]] as const) {
    const t = opt?.timeoutSeconds;
    if (t !== undefined && !(t > 0)) throw ApplicationFailure.nonRetryable(`strategy.${field}.timeoutSeconds: must be positive`, 'InvalidRequest');
  }
  const unpaired = strategyPairingError(input.request.strategy);
  if (unpaired) throw ApplicationFailure.nonRetryable(`strategy.reinspect: ${unpaired}`, 'InvalidRequest');
  const later: StepContext = { v, input, act, step, publish, waiting, returned: (since, deadline) => returned(since, deadline) };

  try {
    const h = await quick.readRemediationHost(ref);
    if (!h.found) return await end('refused', `host ${host} not found: nothing changed`, 'Failed');
    if (!h.online) return await end('refused', 'Unable to remediate, Host is powered off (spec.online is false): nothing changed', 'Failed');
    // A host whose power must never go off is rebooted instead (Metal3 reads the keyed request so).
    const rebootOnly = h.disablePowerOff === true;
    if (kubernetes) {
      const found = await act('findHostNode', 'find the Node')([{ nodeName: input.request.nodeName, hostUid: h.uid }]);
      if (!found.node) return await end('refused', `${found.reason ?? 'no Node'}: nothing changed`, 'Failed');
      v.node = found.node;
    }

    for (;;) {
      v.retryCount += 1;
      v.lastRemediated = now();
      const deadline = Date.parse(v.lastRemediated) + v.strategy.timeoutSeconds * 1000;
      step(rebootOnly ? `reboot (hard) requested with key ${key} (spec.disablePowerOff: rebooted, never powered off)` : `power off (hard) requested with key ${key}`, 'Running');
      await publish();
      held = true;
      await act('holdHostOff', rebootOnly ? `reboot (key ${key})` : `power off (key ${key})`)([{ ref, key, kubernetes }]);
      const iso = new Date(deadline).toISOString();
      const off = rebootOnly
        ? await act('awaitHostRebooted', 'wait for the reboot', waiting(deadline))([{ ref, key, deadline: iso }])
        : await act('awaitHostPower', 'wait for powered off', waiting(deadline))([{ ref, on: false, key, deadline: iso }]);
      if (off.reached) {
        // After a reboot, as after a power off, nothing that ran on the host before is running: the workloads may move.
        step(rebootOnly ? 'the host rebooted' : 'the host reports powered off');
        if (v.node) await takeWorkloadsAway(v.node);
      } else {
        step(`the host did not report ${rebootOnly ? 'its reboot done' : 'powered off'} within ${v.strategy.timeoutSeconds} s`);
      }
      await act('releaseHostOff', `release power-off key ${key}`)([{ ref, key, kubernetes }]);
      held = false;
      const released = now();
      step(rebootOnly ? 'reboot request released' : 'power-off request released: the host powers on', 'Waiting');
      await publish();
      if (off.reached && (await returned(released, deadline))) {
        return await end('succeeded', `remediated: ${v.node ? `Node ${v.node.name} is back` : 'the host was power-cycled'} after ${v.retryCount} power cycle(s)`);
      }
      if (v.retryCount >= v.strategy.retryLimit) break;
      step(`not back within ${v.strategy.timeoutSeconds} s: retrying`);
    }
    // Beyond Metal3 (opt-in): the same image again.
    let beyond = '';
    if (v.strategy.reprovision) {
      step(`retry limit ${v.strategy.retryLimit} reached: re-provisioning`);
      const r = await reprovisionHost(later);
      v.reprovisioned = r.ok ? 'succeeded' : 'failed';
      if (r.ok) return await end('succeeded', `remediated by re-provisioning the same image, after ${v.retryCount} power cycle(s): ${v.node ? `Node ${v.node.name} is back` : 'the host is provisioned and powered on'}`);
      beyond = `, then a re-provision that failed (${r.why})`;
      if (v.strategy.reinspect) beyond += `; ${await reinspectHost(later, r.hardware)}`;
    }
    step(`retry limit ${v.strategy.retryLimit} reached: marking the host capm3.metal3.io/unhealthy`, 'Deleting machine');
    await publish();
    await act('markHostUnhealthy', 'mark the host unhealthy')([{ ref, kubernetes }]);
    v.hostUnhealthy = true;
    return await end('failed', `gave up after ${v.retryCount} power cycle(s)${beyond}: the host is marked capm3.metal3.io/unhealthy`, 'Failed');
  } catch (err) {
    // Cancelled or failed: the host gets its power back and the taint goes. A cancellation is not a failure.
    await CancellationScope.nonCancellable(async () => {
      if (held) await quick.releaseHostOff({ ref, key, kubernetes });
      if (tainted && v.node) await quick.removeOutOfServiceTaint(v.node);
      // Stopped between a re-provision's deprovision and its provision: the host gets its image back, as before the remediation.
      if (later.imageTaken) await quick.changeHostForRemediation({ ref, change: { kind: 'provision', image: later.imageTaken }, since: now() });
    });
    const left = (v.backup ? '; the Node\'s backup stays on the host\'s annotations' : '') + (later.imageTaken ? '; its image is back in its spec' : '');
    await CancellationScope.nonCancellable(() =>
      isCancellation(err)
        ? end('cancelled', `cancelled; power-off key released${left}`)
        : end('failed', `failed: ${err instanceof Error ? err.message : String(err)}; power-off key released${left}`, 'Failed'),
    );
    throw err;
  }

  /** Only once the host is surely off: the taint, or the backup (kept from the first attempt) and the delete. */
  async function takeWorkloadsAway(node: NonNullable<RemediationView['node']>): Promise<void> {
    if (v.nodeHandling === 'OutOfServiceTaint') {
      tainted = (await act('taintNodeOutOfService', `taint Node ${node.name} out-of-service`)([node])) || tainted;
      step(`Node ${node.name} tainted node.kubernetes.io/out-of-service`);
      return;
    }
    if (!v.backup) {
      const backup = await act('backUpNode', `back up Node ${node.name}'s labels and annotations`)([{ ref, node }]);
      if (backup) v.backup = backup;
      step(`Node ${node.name}'s labels and annotations backed up`);
    }
    await act('deleteHostNode', `delete Node ${node.name}`)([node]);
    step(`Node ${node.name} deleted`);
  }

  /** The host came back: the Node Ready again (then restored or untainted, once), or, without a Node, powered on. */
  async function returned(since: string, deadline: number): Promise<boolean> {
    const options = waiting(deadline);
    const iso = new Date(deadline).toISOString();
    if (!v.node) return (await act('awaitHostPower', 'wait for powered on', options)([{ ref, on: true, deadline: iso }])).reached;
    const back = await act('awaitNodeBack', `wait for Node ${v.node.name} to be Ready`, options)([{ node: v.node, since, deadline: iso }]);
    if (!back.node) return false;
    step(`Node ${back.node.name} is Ready again`);
    if (tainted) {
      await act('removeOutOfServiceTaint', `untaint Node ${back.node.name}`)([back.node]);
      tainted = false;
    }
    if (v.backup && !v.restored) {
      await act('restoreNode', `restore Node ${back.node.name}'s labels and annotations`)([{ ref, node: back.node, backup: v.backup }]);
      v.restored = true;
      step(`Node ${back.node.name}'s labels and annotations restored`);
    }
    return true;
  }
}
