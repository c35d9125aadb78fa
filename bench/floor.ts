/**
 * The floor: a straight-line driver that makes the same Ironic calls as
 * metalflow's activities (activities/ironic-*.ts) for the same hosts
 * and the same concurrency, with a tight fixed poll (through the same shared
 * NodeWatcher the activities use) and no Temporal, no API, no secret store. Its time is the best this Ironic on this machine can do.
 *
 * The sequence mirrors what the host workflow decides (workflows/host/decide.ts)
 * for create -> available -> provisioned -> available -> gone, including the
 * power operation the workflow runs when Ironic reports a power state other
 * than spec.online. Poll reads are the only requests allowed to differ. On
 * the agent path (--agent) the same verbs take the nodes through agent
 * inspection, cleaning (provide), a direct deploy and cleaning again
 * (undeploy), each a boot of the fake agent by virtual media.
 */
import { parseBmcAddress } from '../model/bmc';
import { ironicDriverInfo } from '../clients/ironic/driver-info';
import { IronicClient, IronicError, ironicMayPass } from '../clients/ironic/client';
import { bootCapabilities, nodeInterfaces } from '../clients/ironic/node-spec';
import { DELETABLE_STATES, TRANSITIONAL_STATES, type IronicNode } from '../clients/ironic/types';
import { NodeWatcher, DEFAULT_WATCH } from '../clients/ironic/node-watcher';
import { CREDENTIALS, IMAGE, pool, sleep, type BenchHost, type BenchImage, type Phase } from './common';
import { inspectionFailedForIronic, resendDelayMs } from '../activities/ironic/transient';
import { newestHistoryError } from '../activities/ironic/node-driver';

export interface FloorOptions {
  ironicUrl: string;
  namespace: string;
  concurrency: number;
  pollMs: number;
  /** Redfish hosts: no automated cleaning, and no deploy (no agent ramdisk here). */
  redfish: boolean;
  /**
   * The agent path (--agent): the node's inspection is its BMC type's agent inspection, as metalflow's worker
   * with METALFLOW_INSPECTION=agent registers it, and the deploy writes `image` (the one the run serves);
   * cleaning stays on, so provide and undeploy clean through the agent.
   */
  agent?: { image: BenchImage };
}

/** The floor's verbs that got no answer in time: every such send, and those whose latest send got none. */
interface Unanswered {
  sent: string[];
  latest: Set<string>;
}

interface FloorNode {
  host: BenchHost;
  uuid?: string;
  poweredOn: boolean;
}

export class FloorDriver {
  readonly client: IronicClient;
  private readonly nodes = new Map<string, FloorNode>();
  /** Verbs Ironic answered with 5xx, and reads it did not answer (each retried). */
  retries = 0;
  /** Inspections sent again after Ironic failed them for its own saturation (as the activity does). */
  transientResends = 0;
  /** Verbs Ironic refused (400) because the node had already moved: an earlier request of ours landed after all. */
  rejectedReplans = 0;

  /** The same shared waiting as the activities, at the floor's (tighter) poll interval. */
  private readonly watcher: NodeWatcher;

  constructor(private readonly opts: FloorOptions) {
    this.client = new IronicClient({ url: opts.ironicUrl });
    this.watcher = new NodeWatcher(this.client, { ...DEFAULT_WATCH, intervalMs: opts.pollMs });
  }

  async runPhase(phase: Phase, hosts: BenchHost[]): Promise<void> {
    await pool(hosts, this.opts.concurrency, (host) => this.runHost(phase, host));
  }

  /** One host through one phase (a pool of hosts over several sites' floors calls it per host: bench/sites.ts). */
  async runHost(phase: Phase, host: BenchHost): Promise<void> {
    const n = this.nodes.get(host.name) ?? { host, poweredOn: false };
    this.nodes.set(host.name, n);
    switch (phase) {
      case 'available':
        await this.ensureNode(n);
        await this.drive(n, (node, issued) => (node.provision_state !== 'enroll' ? 'done' : issued.includes('manage') ? 'fail' : 'manage'));
        await this.drive(
          n,
          (node, issued, unanswered) => {
            if (node.provision_state === 'manageable') return issued.includes('inspect') ? 'done' : 'inspect';
            // As inspectNode: an inspection Ironic failed for its own saturation (its SQLite locked, or our
            // inspect unanswered and failed with no reason) is sent again. The floor has no sent marker: an
            // unanswered inspect counts as sent here, so the resends stay bounded.
            const sent = [...issued, ...unanswered.sent].filter((v) => v === 'inspect').length;
            return node.provision_state === 'inspect failed' && inspectionFailedForIronic(node.last_error, sent, unanswered.latest.has('inspect')) ? 'inspect' : 'fail';
          },
          {
            inspect: async (issued) => {
              const sent = issued.filter((v) => v === 'inspect').length;
              if (sent > 0) {
                this.transientResends++;
                await sleep(resendDelayMs(sent));
              }
              return {};
            },
          },
        );
        await this.client.getInventory(n.uuid!);
        // As metalflow's prepare (and BMO's): the node stays manageable; provisioning cleans.
        if (!n.poweredOn) await this.setPower(n, true);
        return;
      case 'provisioned':
        await this.drive(n, (node) => ({ active: 'done', available: 'active', manageable: 'provide' } as Record<string, string>)[node.provision_state] ?? 'fail', {
          provide: async () => {
            const node = await this.mustGet(n);
            const clean = !this.opts.redfish;
            if (node.automated_clean !== clean) {
              await this.client.patchNode(n.uuid!, [{ op: 'add', path: '/automated_clean', value: clean }]);
            }
            return {};
          },
          active: async () => {
            const image = this.opts.agent?.image ?? IMAGE;
            await this.client.patchNode(n.uuid!, [
              { op: 'add', path: '/instance_info/image_source', value: image.url },
              { op: 'add', path: '/instance_info/image_disk_format', value: image.format },
              { op: 'add', path: '/instance_info/image_os_hash_algo', value: image.checksumType },
              { op: 'add', path: '/instance_info/image_os_hash_value', value: image.checksum },
            ]);
            const ref = { namespace: this.opts.namespace, name: host.name };
            return {
              configdrive: {
                meta_data: {
                  uuid: n.uuid,
                  'metal3-namespace': ref.namespace,
                  'metal3-name': ref.name,
                  'local-hostname': ref.name,
                  local_hostname: ref.name,
                  name: ref.name,
                },
                user_data: host.userData,
              },
            };
          },
        });
        if (!n.poweredOn) await this.setPower(n, true);
        return;
      case 'deprovisioned':
        await this.drive(n, (node) => (node.provision_state === 'available' ? 'done' : node.provision_state === 'active' ? 'deleted' : 'fail'), {
          deleted: async () => {
            await this.client.patchNode(n.uuid!, [{ op: 'add', path: '/automated_clean', value: !this.opts.redfish }]);
            return {};
          },
        });
        if (!n.poweredOn) await this.setPower(n, true);
        return;
      case 'gone':
        await this.setPower(n, false);
        await this.deleteNode(n);
        return;
    }
  }

  private nodeName(host: BenchHost): string {
    return `${this.opts.namespace}~${host.name}`;
  }

  /**
   * A read Ironic did not answer (too busy: "Headers Timeout" at 100 Redfish hosts) is read again after a
   * pause, as an activity's retry policy (1 s, doubling) reads again; the 30th such failure in a row is the run's.
   */
  private async read<T>(f: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await f();
      } catch (err) {
        if (!ironicMayPass(err) || attempt >= 30) throw err;
        this.retries++;
        await sleep(Math.min(1000 * 2 ** (attempt - 1), 10_000));
      }
    }
  }

  private async mustGet(n: FloorNode): Promise<IronicNode> {
    const node = await this.read(() => this.client.getNode(n.uuid!));
    if (!node) throw new Error(`floor: node ${n.uuid} vanished`);
    return node;
  }

  /** ensureNode: driver interfaces, look up by name then MAC, create, then the boot MAC port. */
  private async ensureNode(n: FloorNode): Promise<void> {
    const access = parseBmcAddress(n.host.bmcAddress);
    if (!access.ok) throw new Error(`floor: bad BMC address ${n.host.bmcAddress}`);
    const enabled = await this.client.getDriver(access.value.driver);
    const name = this.nodeName(n.host);
    let node = await this.client.getNode(name);
    node ??= await this.client.findNodeByMac(n.host.mac);
    if (!node) {
      node = await this.client.createNode({
        name,
        driver: access.value.driver,
        driver_info: ironicDriverInfo(access.value, CREDENTIALS, {}),
        ...nodeInterfaces(access.value, enabled, this.opts.agent ? 'agent' : 'out-of-band'),
        properties: { capabilities: bootCapabilities({ bmc: { address: n.host.bmcAddress, credentialsName: 'x' }, online: true }) },
        automated_clean: !this.opts.redfish,
        extra: { metalflow_host: `${this.opts.namespace}/${n.host.name}` },
      });
    }
    n.uuid = node.uuid;
    const ports = await this.client.listPorts(node.uuid);
    if (!ports.some((p) => p.address.toLowerCase() === n.host.mac)) await this.client.createPort(node.uuid, n.host.mac);
  }

  /** The activities' drive loop: read, act once per verb, re-read at once after a verb, else poll. */
  private async drive(
    n: FloorNode,
    plan: (node: IronicNode, issued: string[], unanswered: Unanswered) => string,
    prepare: Record<string, (issued: string[]) => Promise<Record<string, unknown>>> = {},
  ): Promise<void> {
    const issued: string[] = [];
    const unanswered: Unanswered = { sent: [], latest: new Set() };
    for (;;) {
      let node = await this.mustGet(n);
      // As the activities' ironicReason: Ironic's power sync clears last_error within a sync interval, and a late
      // reader finds the reason in the node's history (an inspection's TemporaryFailure is then sent again).
      if (node.provision_state.endsWith(' failed') && !node.last_error) {
        node = { ...node, last_error: newestHistoryError(await this.read(() => this.client.getNodeHistory(n.uuid!))) ?? null };
      }
      const step = TRANSITIONAL_STATES.has(node.provision_state) ? 'wait' : plan(node, issued, unanswered);
      if (step === 'done') {
        n.poweredOn = node.power_state === 'power on';
        return;
      }
      if (step === 'fail') throw new Error(`floor: node ${n.host.name} in ${node.provision_state}: ${node.last_error ?? ''}`);
      if (step !== 'wait') {
        try {
          const extra = (await prepare[step]?.(issued)) ?? {};
          await this.client.setProvisionState(n.uuid!, step, extra);
          issued.push(step);
          unanswered.latest.delete(step);
          continue;
        } catch (err) {
          // 400 for a verb: as the activities' drive, an earlier request may have landed after all (its
          // answer lost to a timeout under load) and moved the node; re-plan from a fresh read unless
          // nothing moved.
          if (err instanceof IronicError && err.kind === 'rejected') {
            const again = await this.mustGet(n);
            if (again.provision_state === node.provision_state && again.target_provision_state === node.target_provision_state) throw err;
            this.rejectedReplans++;
            continue;
          }
          // 409 busy: re-read. 5xx (e.g. 503 "concurrent action limit ... reached") or no answer: metalflow's
          // activity waits 1 s, doubling, within its attempt; the floor retries at its poll interval.
          if (!(err instanceof IronicError && (err.kind === 'conflict' || ironicMayPass(err)))) throw err;
          this.retries += err.kind === 'conflict' ? 0 : 1;
          // No answer: Ironic may have taken it (the next read shows); an inspection it then fails without a
          // reason is Ironic's, as the activity judges it.
          if (err.kind === 'timed-out') {
            unanswered.sent.push(step);
            unanswered.latest.add(step);
          }
        }
        await sleep(this.opts.pollMs);
        continue;
      }
      await this.watcher.wait(node.uuid, node, 60_000);
    }
  }

  /** setPower: find the node, then read, ask once, poll until the power state matches. */
  private async setPower(n: FloorNode, on: boolean): Promise<void> {
    const target = on ? 'power on' : 'power off';
    await this.read(() => this.client.getNode(n.uuid!));
    for (;;) {
      const node = await this.mustGet(n);
      if (node.power_state === target) {
        n.poweredOn = on;
        return;
      }
      if (!node.target_power_state) {
        try {
          await this.client.setPowerState(n.uuid!, target);
          continue;
        } catch (err) {
          if (!(err instanceof IronicError && (err.kind === 'conflict' || ironicMayPass(err)))) throw err;
        }
        await sleep(this.opts.pollMs);
        continue;
      }
      await this.watcher.wait(node.uuid, node, 60_000);
    }
  }

  private async deleteNode(n: FloorNode): Promise<void> {
    for (;;) {
      const node = await this.client.getNode(n.uuid!);
      if (!node) return;
      if (!TRANSITIONAL_STATES.has(node.provision_state)) {
        try {
          if (!DELETABLE_STATES.has(node.provision_state) && !node.maintenance) {
            await this.client.patchNode(node.uuid, [{ op: 'add', path: '/maintenance', value: true }]);
          }
          await this.client.deleteNode(node.uuid);
          return;
        } catch (err) {
          if (err instanceof IronicError && err.kind === 'not-found') return;
          if (!(err instanceof IronicError && (err.kind === 'conflict' || ironicMayPass(err)))) throw err;
        }
      }
      await sleep(this.opts.pollMs);
    }
  }
}
