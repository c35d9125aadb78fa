/**
 * The host workflow's periodic power check: while idle in a steady state it
 * wakes every `powerCheckSeconds` and reads the real power state from whoever
 * owns it (Ironic's node, or the BMC). Cheap on purpose, so 1,000 idle hosts
 * stay light: one local activity straight from the host workflow (a marker in
 * history, no child workflow, no activity task), and nothing else is recorded
 * unless the state differs from the host's status. A read from the BMC itself
 * (direct provisioner, no Ironic node) is a regular activity instead: a BMC
 * session can take longer than a workflow task may stay open.
 */
import { log, proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import { parseBmcAddress } from '../../../model/bmc';
import type { PowerActivities } from '../../../activities/power/activities';
import type { BmcActivities } from '../../../activities/bmc/activities';
import { DEFAULT_HOST_OPTIONS, type HostState } from '../../../contracts/host';
import { failureMessage } from '../../common/failure-message';
import { ACTIVITY_OPTIONS, LOCAL_ACTIVITY_OPTIONS } from '../../common/activity-options';
import { isSteadyState } from './power-requests';
import { powerPath } from '../provisioners/power';
import { hostSiteQueue } from '../../../model/site';
import { homeSite } from './site';

const local = proxyLocalActivities<PowerActivities>(LOCAL_ACTIVITY_OPTIONS.powerRead);

/**
 * A BMC read is a whole session (Redfish: service root, system, power, session
 * end), tens of seconds on a slow real BMC: an activity that heartbeats, so it
 * never holds the host's workflow task open, bounded by the BMC's own request
 * timeouts (30 s each). One attempt: the next check is the retry.
 */
const bmcRead = proxyActivities<BmcActivities>(ACTIVITY_OPTIONS.bmcPowerRead);

/**
 * A host of another site: its site's worker reads Ironic's node (site-route.ts sends it there).
 * A site that does not take the read in a minute fails this check; the next check is the retry.
 */
const siteRead = proxyActivities<PowerActivities>({ startToCloseTimeout: '30 seconds', scheduleToStartTimeout: '1 minute', retry: { maximumAttempts: 1 } });

/** Milliseconds until the next check, or undefined when the host is not checked now. */
export function powerCheckDelayMs(s: HostState): number | undefined {
  const seconds = s.options.powerCheckSeconds ?? DEFAULT_HOST_OPTIONS.powerCheckSeconds;
  if (!s.spec?.bmc || s.deleteRequested || seconds <= 0 || !isSteadyState(s.status.provisioning.state)) return undefined;
  const nodeId = s.status.provisioning.ID || undefined;
  if (powerPath(s.spec, nodeId) === 'bmc') {
    // A fake:// BMC exists only inside Ironic's fake-hardware driver: nothing to ask.
    const bmc = parseBmcAddress(s.spec.bmc!.address);
    if (!bmc.ok || bmc.value.type === 'fake') return undefined;
    return seconds * 1000;
  }
  // Ironic's node: the power sentinel signals its changes; the check is a backstop.
  const watched = s.options.watchedPowerCheckSeconds;
  if (watched !== undefined && watched > 0) return watched * 1000;
  return seconds * 1000;
}

/** The power check starts with the local activity (an Ironic node's power), not the BMC read activity; without a spec it reads nothing. */
export function powerCheckIsLocal(s: HostState): boolean {
  // A host of another site reads its power through its site's worker: a local activity runs here, beside no Ironic of that site.
  if (!s.spec || hostSiteQueue(homeSite(s))) return false;
  return powerPath(s.spec, s.status.provisioning.ID || undefined) !== 'bmc';
}

/** An empty local activity: the idle wait's fence (idle-wait.ts). */
export async function idleFence(): Promise<void> {
  await local.idleFence();
}

/**
 * The host's real power state (undefined when it cannot be told now: logged,
 * retried at the next check), or that Ironic no longer has the host's node.
 */
export async function readPower(s: HostState): Promise<{ poweredOn?: boolean; nodeGone?: true }> {
  if (!s.spec) return {};
  const nodeId = s.status.provisioning.ID || undefined;
  const via = powerPath(s.spec, nodeId);
  try {
    // Not the 4 s local activity: a slow BMC would never answer in time.
    if (via === 'bmc') return { poweredOn: (await bmcRead.getBmcPower({ ref: s.ref, spec: s.spec })).poweredOn };
    if (hostSiteQueue(homeSite(s))) return await siteRead.readHostPower({ ref: s.ref, spec: s.spec, nodeId, via });
    return await local.readHostPower({ ref: s.ref, spec: s.spec, nodeId, via });
  } catch (err) {
    log.warn('power check failed', { error: failureMessage(err) });
    return {};
  }
}
