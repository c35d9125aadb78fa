/**
 * The floor of a registration again after Ironic lost its database
 * (`npm run bench:at-rest -- --lose-ironic-db`): what Ironic itself needs to
 * register hosts anew, driven straight against the bench stack's Ironic with
 * no Temporal, worker or controller, a few hosts at a time. Per host, as few
 * requests as Ironic allows: the node created with everything in one POST
 * (driver, driver_info, interfaces, properties, the ownership mark), its boot
 * MAC's port, `manage`, and each wait a GET of the node every `pollMs`; then,
 * as for a provisioned host, its image in `instance_info` (one PATCH) and
 * `adopt`. The two phases are timed and Ironic's CPU measured apart:
 * registration (what an available host needs) and adoption (what a
 * provisioned one needs on top). The nodes are deleted afterwards.
 *
 * Ironic's CPU per host times the fleet's hosts is what Ironic alone spends
 * to register that fleet again: beside the 60 s target it says how much of the
 * target is Ironic's own cost on this machine.
 */
import { randomBytes } from 'node:crypto';
import { parseBmcAddress } from '../model/bmc';
import { ironicDriverInfo } from '../clients/ironic/driver-info';
import { IronicClient, IronicError } from '../clients/ironic/client';
import { bootCapabilities, nodeInterfaces } from '../clients/ironic/node-spec';
import { TRANSITIONAL_STATES, type IronicNode } from '../clients/ironic/types';
import { instanceInfo } from '../activities/ironic/instance-info';
import { OWNER_KEY } from '../activities/ironic/node-driver';
import { CREDENTIALS, IMAGE, pool, sleep } from './common';
import type { CpuByProcess } from './report';

export interface ReregFloorOptions {
  ironicUrl: string;
  hosts: number;
  /** Hosts driven at once. */
  concurrency: number;
  /** Between two reads of a node that Ironic is working on. */
  pollMs: number;
  /** CPU seconds so far, per process (Ironic's among them). */
  cpuNow: () => CpuByProcess;
}

export interface ReregFloorPhase {
  seconds: number;
  requests: number;
  requestsPerHost: number;
  ironicCpuSeconds: number;
  ironicCpuSecondsPerHost: number;
}

export interface ReregFloorFigures {
  hosts: number;
  concurrency: number;
  pollMs: number;
  /** Node (one POST), port, manage, and the reads that wait for it: what an available host needs. */
  register: ReregFloorPhase;
  /** instance_info (one PATCH) and adopt, and the reads that wait for it: a provisioned host's part on top. */
  adopt: ReregFloorPhase;
}

interface FloorHost {
  name: string;
  mac: string;
  uuid?: string;
}

const tenths = (x: number): number => Math.round(x * 10) / 10;
const hundredths = (x: number): number => Math.round(x * 100) / 100;

/** Registers `hosts` fake-hardware nodes anew and adopts them, phase by phase; deletes them after. */
export async function reregistrationFloor(opts: ReregFloorOptions): Promise<ReregFloorFigures> {
  const ironic = new IronicClient({ url: opts.ironicUrl });
  const id = randomBytes(3).toString('hex');
  const hex = (x: number): string => x.toString(16).padStart(2, '0');
  const r = randomBytes(2);
  const hosts: FloorHost[] = Array.from({ length: opts.hosts }, (_, i) => ({
    name: `floor-${id}-${String(i).padStart(4, '0')}`,
    // Locally administered (0x56), apart from the bench's hosts' 52:…
    mac: ['56', hex(r[0]!), hex(r[1]!), hex(i >> 16), hex((i >> 8) & 0xff), hex(i & 0xff)].join(':'),
  }));
  let requests = 0;
  const send = <T>(f: () => Promise<T>): Promise<T> => {
    requests++;
    return f();
  };

  /** Reads the node every pollMs until Ironic is done with it. */
  const settled = async (uuid: string): Promise<IronicNode> => {
    for (;;) {
      await sleep(opts.pollMs);
      const node = await send(() => ironic.getNode(uuid));
      if (!node) throw new Error(`rereg floor: node ${uuid} vanished`);
      if (!TRANSITIONAL_STATES.has(node.provision_state)) return node;
    }
  };
  /** A verb, sent again while Ironic says the node is locked (409). */
  const verb = async (uuid: string, target: string): Promise<void> => {
    for (;;) {
      try {
        await send(() => ironic.setProvisionState(uuid, target));
        return;
      } catch (err) {
        if (!(err instanceof IronicError && err.kind === 'conflict')) throw err;
        await sleep(opts.pollMs);
      }
    }
  };

  const phase = async (each: (h: FloorHost) => Promise<void>): Promise<ReregFloorPhase> => {
    const req0 = requests;
    const cpu0 = opts.cpuNow().ironic;
    const t0 = Date.now();
    await pool(hosts, opts.concurrency, each);
    const seconds = (Date.now() - t0) / 1000;
    const cpu = opts.cpuNow().ironic - cpu0;
    const n = requests - req0;
    return {
      seconds: tenths(seconds),
      requests: n,
      requestsPerHost: tenths(n / hosts.length),
      ironicCpuSeconds: tenths(cpu),
      ironicCpuSecondsPerHost: hundredths(cpu / hosts.length),
    };
  };

  const access = parseBmcAddress('fake://floor');
  if (!access.ok) throw new Error('rereg floor: fake:// not parsed');
  // Read once, as the worker caches it: not a per-host request.
  const enabled = await ironic.getDriver(access.value.driver);
  const interfaces = nodeInterfaces(access.value, enabled, 'out-of-band');
  const capabilities = bootCapabilities({ bmc: { address: 'fake://floor', credentialsName: 'x' }, online: true });
  try {
    const register = await phase(async (h) => {
      const node = await send(() =>
        ironic.createNode({
          name: h.name,
          driver: access.value.driver,
          driver_info: ironicDriverInfo(access.value, CREDENTIALS, {}),
          ...interfaces,
          properties: { capabilities },
          automated_clean: false,
          extra: { [OWNER_KEY]: `floor-${id}/${h.name}` },
        }),
      );
      h.uuid = node.uuid;
      await send(() => ironic.createPort(node.uuid, h.mac));
      await verb(node.uuid, 'manage');
      const managed = await settled(node.uuid);
      if (managed.provision_state !== 'manageable') throw new Error(`rereg floor: ${h.name} ended in ${managed.provision_state} after manage: ${managed.last_error ?? ''}`);
    });
    const adopt = await phase(async (h) => {
      await send(() => ironic.patchNode(h.uuid!, instanceInfo(IMAGE, {})));
      await verb(h.uuid!, 'adopt');
      const adopted = await settled(h.uuid!);
      if (adopted.provision_state !== 'active') throw new Error(`rereg floor: ${h.name} ended in ${adopted.provision_state} after adopt: ${adopted.last_error ?? ''}`);
    });
    return { hosts: hosts.length, concurrency: opts.concurrency, pollMs: opts.pollMs, register, adopt };
  } finally {
    await pool(hosts.filter((h) => h.uuid), opts.concurrency, async (h) => {
      await ironic.setMaintenance(h.uuid!, 'bench: the re-registration floor is done').catch(() => undefined);
      await ironic.deleteNode(h.uuid!).catch(() => undefined);
    });
  }
}

/** The floor beside the fleet's registration again: Ironic's CPU per host, metalflow's over the floor's, and for the whole fleet. */
export interface FloorBeside {
  /** metalflow's Ironic CPU seconds per host (the recovery window's) over the floor's registration alone. */
  metalflowOverFloorCpu?: number;
  /** metalflow's Ironic requests per host over the floor's registration alone. */
  metalflowOverFloorRequests?: number;
  /** The fleet's hosts times the floor's Ironic CPU per registration: what Ironic alone needs to register the fleet again, in CPU seconds. */
  fleetIronicCpuSeconds: number;
  /** That as a share of the 60 s target (Ironic is one process: at most about one core), in percent. */
  fleetShareOfTargetPercent: number;
}

export function floorBeside(floor: ReregFloorFigures, loss: { ironicCpuSecondsPerHost: number; ironicRequestsPerHost: number; targetSeconds: number } | undefined, fleet: number): FloorBeside {
  const cpu = floor.register.ironicCpuSecondsPerHost;
  const fleetCpu = fleet * cpu;
  return {
    ...(loss && cpu > 0 ? { metalflowOverFloorCpu: hundredths(loss.ironicCpuSecondsPerHost / cpu) } : {}),
    ...(loss && floor.register.requestsPerHost > 0 ? { metalflowOverFloorRequests: hundredths(loss.ironicRequestsPerHost / floor.register.requestsPerHost) } : {}),
    fleetIronicCpuSeconds: tenths(fleetCpu),
    fleetShareOfTargetPercent: Math.round((fleetCpu / (loss?.targetSeconds ?? 60)) * 100),
  };
}

export function floorSummary(f: ReregFloorFigures & FloorBeside, loss: { ironicCpuSecondsPerHost: number; ironicRequestsPerHost: number } | undefined, fleet: number): string {
  const mf = loss ? `; metalflow: ${loss.ironicRequestsPerHost} requests, ${loss.ironicCpuSecondsPerHost} Ironic CPU-s per host` : '';
  return (
    `floor, ${f.hosts} hosts ${f.concurrency} at a time: registration ${f.register.requestsPerHost} requests, ${f.register.ironicCpuSecondsPerHost} Ironic CPU-s per host (${f.register.seconds} s); ` +
    `adoption on top ${f.adopt.requestsPerHost} requests, ${f.adopt.ironicCpuSecondsPerHost} CPU-s per host${mf}; ` +
    `Ironic alone for ${fleet} hosts: ${f.fleetIronicCpuSeconds} CPU-s, ${f.fleetShareOfTargetPercent} % of the 60 s target`
  );
}
