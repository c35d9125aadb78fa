/**
 * Power changes through Ironic's node (before a delete, after a deploy) and
 * the node's removal: delete (the host is gone) or detach (the node record
 * leaves Ironic, the machine keeps running).
 */
import { activityContext, heartbeat, poller, type PollOptions } from './activity-context';
import { IronicError, type IronicClient } from '../clients/ironic/client';
import { DELETABLE_STATES, TRANSITIONAL_STATES } from '../clients/ironic/types';
import { operationFailed, summary, type NodeDriver, type NodeSummary, type NodeTarget } from './ironic-node-driver';

export interface TeardownDeps {
  ironic: IronicClient;
  poll: PollOptions;
  driver: NodeDriver;
}

export function createTeardownActivities(deps: TeardownDeps) {
  const { ironic, poll } = deps;
  const { findNode, mustGetNode, waitForChange } = deps.driver;

  async function setPower(input: NodeTarget & { on: boolean }): Promise<NodeSummary & { found: boolean }> {
    const found = await findNode(input);
    if (!found) return { nodeId: '', provisionState: '', poweredOn: false, found: false };
    const target = input.on ? 'power on' : 'power off';
    const ctx = activityContext();
    let issued = Boolean((ctx?.info.heartbeatDetails as { issued?: boolean } | undefined)?.issued);
    const polling = poller(poll);
    for (;;) {
      const node = await mustGetNode(found.uuid);
      if (node.power_state === target) return { ...summary(node), found: true };
      if (!node.target_power_state) {
        if (issued && node.last_error) throw operationFailed(`power ${input.on ? 'on' : 'off'} failed: ${node.last_error}`);
        try {
          await ironic.setPowerState(node.uuid, target);
          issued = true;
          heartbeat({ issued });
          continue;
        } catch (err) {
          if (!(err instanceof IronicError && err.kind === 'conflict')) throw err;
        }
        await polling.wait({ issued });
        continue;
      }
      await waitForChange(node, { issued });
    }
  }

  async function deleteNode(input: NodeTarget, reason = 'metalflow: host deleted'): Promise<{ deleted: boolean }> {
    const polling = poller(poll);
    for (;;) {
      const node = await findNode(input);
      if (!node) return { deleted: true };
      if (!TRANSITIONAL_STATES.has(node.provision_state)) {
        try {
          if (!DELETABLE_STATES.has(node.provision_state) && !node.maintenance) {
            // Ironic refuses to delete from failed states unless the node is in maintenance.
            await ironic.setMaintenance(node.uuid, reason);
          }
          await ironic.deleteNode(node.uuid);
          return { deleted: true };
        } catch (err) {
          if (err instanceof IronicError && err.kind === 'not-found') return { deleted: true };
          if (!(err instanceof IronicError && err.kind === 'conflict')) throw err;
        }
      }
      await polling.wait();
    }
  }

  /**
   * Metal3's detach: the node record leaves Ironic as it is. An active node is
   * put in maintenance first (Ironic's way to delete without tearing down), so
   * the machine is neither deprovisioned nor powered off.
   */
  async function detachNode(input: NodeTarget): Promise<{ deleted: boolean }> {
    return deleteNode(input, 'metalflow: host detached');
  }

  return { setPower, deleteNode, detachNode };
}
