/**
 * Power reads and changes on the path that owns the host's power: Ironic when
 * it manages the node, the BMC itself otherwise (spec.provisioner direct, or
 * no Ironic node), so the two never fight over a host.
 *
 * Ironic changes are level-triggered like drive(): the power targets already
 * sent are carried in heartbeat details, so a retried attempt never sends a
 * second reboot. A soft power off / soft reboot that Ironic refuses (the
 * driver cannot) or that fails within its timeout is followed by a hard one,
 * as Metal3 does.
 */
import { ApplicationFailure } from '@temporalio/activity';
import { FAILURE } from '../../model/failures';
import type { HostRef, HostSpec } from '../../model/host';
import { activityContext, poller, DEFAULT_POLL, type PollOptions } from '../common/activity-context';
import { IronicError, type IronicClient, type IronicPowerTarget } from '../../clients/ironic/client';
import { POWER_FIELDS, type IronicNode } from '../../clients/ironic/types';
import type { BmcActivities } from '../bmc/activities';
import { markerKey, ownMarker, provisionMoment, writeMarker } from '../ironic/sent-marker';
import { nodeGone, translate } from '../ironic/node-driver';

export type PowerPath = 'ironic' | 'bmc';

export type PowerMode = 'soft' | 'hard';

export interface PowerActivityDeps {
  ironic: IronicClient;
  bmc: Pick<BmcActivities, 'getBmcPower'>;
  poll?: PollOptions;
}

export interface ReadPowerInput {
  ref: HostRef;
  /** References only; the BMC password is read by the BMC activity at the moment of use. */
  spec: HostSpec;
  nodeId?: string;
  via: PowerPath;
}

export interface NodePowerInput {
  ref: HostRef;
  nodeId: string;
  /** `reboot` ends powered on (a host that is off is only powered on). */
  action: 'on' | 'off' | 'reboot';
  mode?: PowerMode;
  /** Bound of a soft power off / soft reboot before the hard one. */
  softTimeoutSeconds: number;
  /** Reboot with Ironic's `rebooting` targets, never through off (spec.disablePowerOff). */
  inPlace?: boolean;
}

const failed = (message: string): ApplicationFailure => ApplicationFailure.nonRetryable(message, FAILURE.operationFailed);

export function createPowerActivities(deps: PowerActivityDeps) {
  const { ironic } = deps;
  const poll = deps.poll ?? DEFAULT_POLL;

  /**
   * The host's real power state, from whoever owns it. `undefined` when it cannot be
   * told (no node, or Ironic has not read the BMC yet); a BMC that cannot be reached fails.
   * `nodeGone`: Ironic no longer has the node the host registered (its database was
   * emptied, or the node deleted): the host registers again.
   */
  async function readHostPower(input: ReadPowerInput): Promise<{ poweredOn?: boolean; nodeGone?: true }> {
    if (input.via === 'bmc') return { poweredOn: (await deps.bmc.getBmcPower({ ref: input.ref, spec: input.spec })).poweredOn };
    if (!input.nodeId) return {};
    try {
      const node = await ironic.getNodeState(input.nodeId, [...POWER_FIELDS]);
      if (!node) return { nodeGone: true };
      if (node.target_power_state) return {};
      if (node.power_state === 'power on') return { poweredOn: true };
      if (node.power_state === 'power off') return { poweredOn: false };
      return {};
    } catch (err) {
      return translate(err);
    }
  }

  async function mustGet(nodeId: string): Promise<IronicNode> {
    const node = await ironic.getNode(nodeId);
    if (!node) throw nodeGone(nodeId);
    return node;
  }

  /**
   * Power on, off (soft first when asked) or reboot an Ironic node through Ironic's power
   * targets (`soft power off`, `power off`, `soft rebooting`, `rebooting`, `power on`).
   */
  async function changeNodePower(input: NodePowerInput): Promise<{ poweredOn: boolean; sent: string[] }> {
    const ctx = activityContext();
    const sent = [...((ctx?.info.heartbeatDetails as { sent?: string[] } | undefined)?.sent ?? [])];
    const polling = poller(poll);
    // A reboot is a power off, then on (as Metal3 does it): each step shows on the node, so
    // with the step marked on the node before it is sent, a retry after a crash can tell
    // "not off yet" from "off and on again" on a node that is on. Ironic's own `rebooting`
    // leaves nothing to tell them apart, and a lost record meant a second reboot.
    // With disablePowerOff the host must never be seen off: Ironic's reboot it is, and a
    // worker killed right after sending it may send it twice (see docs/reliability.md).
    const inPlace = input.action === 'reboot' && input.inPlace === true;
    const soft: IronicPowerTarget = inPlace ? 'soft rebooting' : 'soft power off';
    const hard: IronicPowerTarget = inPlace ? 'rebooting' : 'power off';
    const key = markerKey();
    const phase = (node: IronicNode): string | undefined => {
      const marked = ownMarker(node, key)?.verb;
      if (marked) return marked;
      if (sent.includes('power on')) return 'reboot-on';
      return sent.some((t) => t === soft || t === hard) ? 'reboot-off' : undefined;
    };
    const mark = async (node: IronicNode, verb: string): Promise<void> => {
      if (key && ownMarker(node, key)?.verb !== verb) await writeMarker(ironic, input.nodeId, { key, verb, before: provisionMoment(node) });
    };
    const send = async (target: IronicPowerTarget): Promise<boolean> => {
      try {
        await ironic.setPowerState(input.nodeId, target, target.startsWith('soft') ? input.softTimeoutSeconds : undefined);
        sent.push(target);
        ctx?.heartbeat({ sent });
        polling.reset();
        return true;
      } catch (err) {
        if (err instanceof IronicError && err.kind === 'conflict') return false; // locked: read again
        // A soft target the driver cannot do is answered 400: go hard, as Metal3 does.
        if (target === soft && err instanceof IronicError && err.kind === 'rejected') {
          sent.push(`${soft} refused`);
          ctx?.heartbeat({ sent });
          return send(hard);
        }
        throw err;
      }
    };
    try {
      for (;;) {
        const node = await mustGet(input.nodeId);
        if (!node.target_power_state) {
          const on = node.power_state === 'power on';
          const lastSent = sent.filter((t) => !t.endsWith('refused')).at(-1);
          if (lastSent && node.last_error) {
            if (lastSent !== soft) throw failed(`${lastSent} failed: ${node.last_error}`);
            await send(hard); // soft did not finish within its timeout
            continue;
          }
          if (input.action === 'on') {
            if (on) return { poweredOn: true, sent };
            if (!sent.includes('power on')) await send('power on');
          } else if (input.action === 'off') {
            if (node.power_state === 'power off') return { poweredOn: false, sent };
            if (!lastSent) await send(input.mode === 'soft' ? soft : hard);
          } else if (inPlace) {
            if (lastSent && on) return { poweredOn: true, sent };
            if (!on) {
              if (!sent.includes('power on')) await send('power on');
            } else if (!lastSent) {
              await send(input.mode === 'hard' ? hard : soft);
            }
          } else if (on) {
            // Reboot: done once it was on again after the off; a host that was off is only powered on.
            if (phase(node) === 'reboot-on') return { poweredOn: true, sent };
            if (!lastSent) {
              await mark(node, 'reboot-off');
              await send(input.mode === 'hard' ? hard : soft);
            }
          } else {
            await mark(node, 'reboot-on');
            if (!sent.includes('power on')) await send('power on');
          }
        }
        await polling.wait({ sent });
      }
    } catch (err) {
      return translate(err);
    }
  }

  /**
   * Nothing: the idle wait's fence (idle-wait.ts). A local activity
   * records no event when scheduled and its result waits for a real workflow task, so
   * what the wait does after a fire lands in the task that carries the fire.
   */
  async function idleFence(): Promise<void> {}

  return { readHostPower, changeNodePower, idleFence };
}

export type PowerActivities = ReturnType<typeof createPowerActivities>;
