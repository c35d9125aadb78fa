/**
 * The spec's node settings (automatedCleaningMode, bootMode, root device
 * hints, architecture, disablePowerOff, BMC address) applied to the Ironic
 * node before each step that depends on them, as BMO pushes them on every
 * reconcile. Before each attempt, so a spec changed while a failed step waits
 * to retry reaches the node before the retry: a host whose automated cleaning
 * fails gets out with `automatedCleaningMode: disabled` instead of cleaning
 * again. The activity writes only what differs (nothing, most of the time).
 */
import { isCancellation, patched, proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { IronicActivities } from '../../../activities/ironic/activities';
import type { OperationKind } from '../../../contracts/host';
import { hostSiteQueue } from '../../../model/site';
import { routedSite } from '../site-route';
import type { OperationInput } from '../operation-types';
import { provisionerTraits } from '../provisioners/traits';
import { ACTIVITY_OPTIONS, LOCAL_ACTIVITY_OPTIONS } from '../../common/activity-options';

const quick = proxyActivities<IronicActivities>(ACTIVITY_OPTIONS.ironicCall);
const local = proxyLocalActivities<IronicActivities>(LOCAL_ACTIVITY_OPTIONS.nodeSettings);

/**
 * Steps Ironic runs on the node's settings: cleaning (automated_clean, disable_power_off),
 * deploying (boot mode, root device), inspecting and the BMC access all of them use.
 * Registration writes them itself; power, delete and detach need none of them.
 */
const DEPENDS: ReadonlySet<OperationKind> = new Set(['inspect', 'prepare', 'provision', 'deprovision', 'clean', 'service']);

/**
 * Steps whose activity brings the settings in line itself, with its own first read of the node: one GET where the
 * check before it cost one more (a fast inspection reads the BMC, not the node: the check stays before it).
 */
const IN_STEP: ReadonlySet<OperationKind> = new Set(['inspect', 'prepare', 'provision', 'deprovision']);

/**
 * Brings the node's settings in line with the spec before `op`; nothing for a host without an Ironic node.
 * True when the step's activity is to do it instead (its input then carries the spec: settingsInStep).
 */
export async function applyNodeSettings(op: OperationKind, input: OperationInput): Promise<boolean> {
  const { spec, nodeId } = input;
  if (!DEPENDS.has(op) || !spec?.bmc || !provisionerTraits(spec).ironicNode || !nodeId) return false;
  // patch since v0.2.0
  if (IN_STEP.has(op) && !(op === 'inspect' && spec.inspectionMode === 'fast') && patched('node-settings-in-step')) return true;
  const args = { ref: input.ref, spec, nodeId };
  // A host of another site: its site's worker reaches that site's Ironic (site-route.ts); a local activity would run here.
  if (hostSiteQueue(routedSite())) {
    await quick.syncNodeSettings(args);
    return false;
  }
  try {
    await local.syncNodeSettings(args);
  } catch (err) {
    if (isCancellation(err)) throw err;
    // Slow (a busy Ironic) or failed: the activity does it, with the retries every Ironic call has.
    await quick.syncNodeSettings(args);
  }
  return false;
}
