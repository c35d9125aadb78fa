/**
 * A registered host moving between sites (docs/sites.md, *Moving a
 * registered host between sites*), run as the host's `move` operation: the pivot's
 * guarantees (no deploy, no clean, no power change) inside one host
 * workflow. Each step is idempotent, so a worker killed anywhere resumes
 * where the history says it was:
 *
 * 1. hold: the node at the old site goes into maintenance (that Ironic
 *    then neither powers nor acts on it, its power sync only reads);
 * 2. adopt: the new site registers the host and adopts it as it is (a
 *    provisioned host `adopt`ed active with its image, any other left
 *    `manageable`), as attaching again after a detach does;
 * 3. switch: the new node is the host's, recorded in its state; from here
 *    the move only goes forward and its hardware calls go to the new site;
 * 4. release: the old node is deleted as it is (in maintenance already: no
 *    deprovision, no power off).
 *
 * At no point do two nodes out of maintenance hold the host. Withdrawn
 * before the switch (spec.site back to the old site) or deleted meanwhile,
 * the move is undone instead: any node of the host at the new site removed
 * as it is, the old node out of the move's maintenance.
 */
import { CancellationScope, proxyActivities } from '@temporalio/workflow';
import { ACTIVITY_OPTIONS } from '../common/activity-options';
import type { IronicActivities } from '../../activities/ironic/activities';
import type { PowerActivities } from '../../activities/power/activities';
import type { SiteMove } from '../../contracts/host';
import { enrollOperation } from './provisioners/ironic';
import { atSite } from './site-route';
import { siteOf } from './rules/site';
import { registrationFingerprint } from './decide';
import type { OperationInput, OperationOutcome } from './operation-types';
import type { HostContext } from './context';

const quick = proxyActivities<IronicActivities>(ACTIVITY_OPTIONS.ironicCall);
const power = proxyActivities<PowerActivities>(ACTIVITY_OPTIONS.ironicCall);

/** The maintenance reason of the move's hold: what tells it from anyone else's. */
const holdReason = (m: SiteMove): string => `metalflow: host moving from site "${m.from}" to site "${m.to}"`;

const withdrawn = (ctx: HostContext, m: SiteMove): boolean => ctx.s.deleteRequested || siteOf(ctx.s.spec) !== m.to;

export async function moveOperation(ctx: HostContext, input: OperationInput, progress: (step: string) => void): Promise<OperationOutcome> {
  const { s } = ctx;
  const m = s.siteMove;
  if (!m) return {};
  if (!m.switched && !m.back && withdrawn(ctx, m)) m.back = true;
  if (m.back) return undo(ctx, input, m, progress);
  const target = { ref: input.ref, bootMACAddress: input.spec?.bootMACAddress };
  if (!m.switched) {
    // A BareMetalHost says where its host is going before the first Ironic hears of it. Not awaited (the write
    // never is), and not called at all in API mode: even a no-op's await would shift a recorded move's commands.
    if (ctx.s.options.publishStatus) void ctx.writeStatus({ type: 'Normal', reason: 'SiteMoveStarted', message: `moving from site "${m.from}" (Ironic node ${m.fromNode}) to site "${m.to}": no deploy, no power change` });
    progress('hold');
    await atSite(m.from, () => quick.holdNode({ ...target, nodeId: m.fromNode, reason: holdReason(m) }));
    progress('adopt');
    const state = s.status.provisioning.state;
    // Never by the old node's id: that is the other Ironic's.
    const enrolled = await atSite(m.to, () =>
      enrollOperation({ ref: input.ref, spec: input.spec, ...(state === 'provisioned' ? { adopt: { image: s.status.provisioning.image } } : {}) }),
    );
    const nodeId = enrolled.nodeId!;
    // A fresh node of a driver that keeps power in Ironic's database (fake-hardware) knows none: the recorded power stands.
    const read = await atSite(m.to, () => power.readHostPower({ ref: input.ref, spec: input.spec!, nodeId, via: 'ironic' }));
    if (withdrawn(ctx, m)) {
      // Between the adoption and here the move was withdrawn: the new node goes again, the old one stays.
      m.back = true;
      return undo(ctx, input, m, progress);
    }
    // The switch.
    m.switched = true;
    s.status.provisioning.ID = nodeId;
    if (read.poweredOn !== undefined) s.status.poweredOn = read.poweredOn;
    if (input.spec) {
      s.registered = registrationFingerprint(input.spec);
      s.registeredDisablePowerOff = input.spec.disablePowerOff === true;
    }
    ctx.indexForSearch();
  }
  progress('release');
  const newNode = s.status.provisioning.ID;
  // Two sites that share one Ironic found the same node: it is the host's, out of the move's maintenance.
  if (newNode === m.fromNode) {
    await CancellationScope.nonCancellable(() => atSite(m.to, () => quick.releaseNodeHold({ ...target, nodeId: newNode, reason: holdReason(m) })));
  } else {
    await CancellationScope.nonCancellable(() => atSite(m.from, () => quick.detachNode({ ...target, nodeId: m.fromNode, spare: newNode })));
  }
  delete s.siteMove;
  return { reason: 'SiteMoved', note: `moved from site "${m.from}" to site "${m.to}": Ironic node ${newNode} there, node ${m.fromNode} removed from site "${m.from}"` };
}

async function undo(ctx: HostContext, input: OperationInput, m: SiteMove, progress: (step: string) => void): Promise<OperationOutcome> {
  const target = { ref: input.ref, bootMACAddress: input.spec?.bootMACAddress };
  progress('undo');
  await CancellationScope.nonCancellable(async () => {
    // The host's node at the new site, if the adoption got that far (found by name or boot MAC and its mark), as it is.
    await atSite(m.to, () => quick.detachNode({ ...target, spare: m.fromNode }));
    await atSite(m.from, () => quick.releaseNodeHold({ ...target, nodeId: m.fromNode, reason: holdReason(m) }));
  });
  if (siteOf(ctx.s.spec) === m.from) delete ctx.s.siteMove;
  // Deleted before the switch: the host stays at the old site, whatever spec.site says, while its delete runs.
  else m.undone = true;
  return { reason: 'SiteMoveUndone', note: `the move to site "${m.to}" was undone: the host stays at site "${m.from}" with Ironic node ${m.fromNode}` };
}
