/**
 * What a node read costs Ironic's process in CPU: one fields-limited GET of a
 * node against one fields-limited list of every node, at the node count asked
 * for; also a GET of the whole node and the power check's two-field GET (the
 * same CPU for Ironic as the whole node, 2026-11-29). The node watcher
 * (clients/ironic/node-watcher.ts) chooses between GETs and a list by this
 * ratio (nodesPerGet): a list replaces the GETs of the watched nodes only
 * when it costs less.
 *
 *   node --import tsx bench/ironic-read-cost.ts --url http://127.0.0.1:6385 --pid <ironic pid> [--nodes 500] [--gets 300] [--lists 20]
 *
 * `--pid`: the pid scripts/stack.sh recorded (run/ironic.pid); it starts Ironic in a session of its own, so that pid
 * is also the process group whose CPU is summed (Ironic forks a worker).
 *
 * Creates fake-hardware nodes (named `readcost-…`) until Ironic has `--nodes`,
 * deletes them at the end. CPU is read from /proc for Ironic's process group,
 * less what the same process spent per second while nobody asked (its periodic
 * tasks). Run it on an otherwise idle Ironic and machine.
 */
import { parseArgs } from 'node:util';
import { randomBytes } from 'node:crypto';
import { IronicClient } from '../clients/ironic/client';
import { WATCHED_FIELDS } from '../clients/ironic/node-watcher';
import { readProcGroup } from './procs';
import { POWER_FIELDS } from '../clients/ironic/types';

const { values } = parseArgs({
  options: {
    url: { type: 'string' },
    pid: { type: 'string' },
    nodes: { type: 'string', default: '500' },
    gets: { type: 'string', default: '300' },
    lists: { type: 'string', default: '20' },
  },
});
if (!values.url || !values.pid) throw new Error('--url and --pid (Ironic) are required');
const pgid = Number(values.pid);
const cpu = (): number => readProcGroup(pgid)?.cpuSeconds ?? NaN;
const ironic = new IronicClient({ url: values.url });
const fields = [...WATCHED_FIELDS];

const created: string[] = [];
const want = Number(values.nodes);
let have = (await ironic.listNodeStates(['uuid'])).length;
const tag = randomBytes(3).toString('hex');
while (have < want) {
  const batch = Array.from({ length: Math.min(20, want - have) }, (_, i) => ironic.createNode({ name: `readcost-${tag}-${have + i}`, driver: 'fake-hardware' }));
  for (const n of await Promise.all(batch)) created.push(n.uuid);
  have += batch.length;
}

/** CPU seconds Ironic spends per second with nobody asking (its periodic tasks), over `ms`. */
async function idleRate(ms: number): Promise<number> {
  const c0 = cpu();
  const t0 = Date.now();
  await new Promise((r) => setTimeout(r, ms));
  return (cpu() - c0) / ((Date.now() - t0) / 1000);
}

/** Ironic's CPU seconds for `n` calls of `call`, one at a time, less its idle rate over the same time. */
async function costOf(n: number, call: () => Promise<unknown>, idle: number): Promise<number> {
  const c0 = cpu();
  const t0 = Date.now();
  for (let i = 0; i < n; i++) await call();
  const seconds = (Date.now() - t0) / 1000;
  return (cpu() - c0 - idle * seconds) / n;
}

try {
  const all = await ironic.listNodeStates(fields);
  const ids = all.map((n) => n.uuid);
  const idle = await idleRate(5000);
  let k = 0;
  const perGet = await costOf(Number(values.gets), () => ironic.getNodeState(ids[k++ % ids.length]!, fields), idle);
  // The whole node (every field), as the idle power check read it before it asked for two fields.
  const perFullGet = await costOf(Number(values.gets), () => ironic.getNode(ids[k++ % ids.length]!), idle);
  const perPowerGet = await costOf(Number(values.gets), () => ironic.getNodeState(ids[k++ % ids.length]!, [...POWER_FIELDS]), idle);
  const perList = await costOf(Number(values.lists), () => ironic.listNodeStates(fields), idle);
  const perListedNode = perList / all.length;
  console.log(
    JSON.stringify(
      {
        nodes: all.length,
        idleCpuPerSecond: Number(idle.toFixed(4)),
        cpuMsPerGet: Number((perGet * 1000).toFixed(2)),
        cpuMsPerFullGet: Number((perFullGet * 1000).toFixed(2)),
        cpuMsPerPowerGet: Number((perPowerGet * 1000).toFixed(2)),
        cpuMsPerList: Number((perList * 1000).toFixed(1)),
        cpuMsPerListedNode: Number((perListedNode * 1000).toFixed(3)),
        nodesPerGet: Number((perGet / perListedNode).toFixed(1)),
      },
      null,
      2,
    ),
  );
} finally {
  for (const id of created) await ironic.deleteNode(id).catch(() => undefined);
}
