/**
 * What the run must show: no host lost, none stuck, no deploy or reboot sent
 * twice (counted per node at the proxies), no provisioned host deployed again
 * after Ironic lost its database, and no planted secret in any decoded history
 * or any log. Each check keeps the hosts behind its figure, so a failure
 * names them.
 */
import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';
import type { Client } from '@temporalio/client';
import type { PayloadCodec } from '@temporalio/common';
import { hostWorkflowId } from '../../model/host-ref';
import { isDeploy, isPowerChange, reachedPeer, type RecordedRequest } from '../support/ironic-proxy';
import { secretsInHistories } from '../support/history-secrets';
import type { Wipe } from './faults';
import type { HostRecord } from './fleet';
import type { ChaosHost } from './hosts';
import type { IronicWatch } from './ironic-watch';

export interface Counted {
  /** Hosts with exactly one. */
  once: number;
  /** Sent twice on one node (or to one BMC): `<host>: why`. */
  twice: string[];
  /** Never sent although the host got there. */
  missing: string[];
  /** A second one after the first failed in Ironic (not a duplicate): `<host>`. */
  retriedAfterFailure: string[];
  /**
   * Reboots: none sent because the host's node was lost during the reboot and
   * the node it registered again came up off (a reboot of a host that is off
   * is its power on, as in Metal3).
   */
  servedByNewNode: string[];
}

export interface Checks {
  lost: string[];
  stuck: string[];
  deploys: Counted;
  reboots: Counted;
  /** Hosts whose node was active when Ironic lost its database and that were deployed again. */
  reprovisioned: string[];
  /** How many hosts were provisioned at an empty-database restart (what the check above covers). */
  activeAtWipe: number;
  /** Hosts whose node was active while their provisioning still ran at the restart, deployed again after it (allowed). */
  redeployedMidProvisioning: string[];
  /** Where a planted secret was found: `history <where>` or `log <file>`; the secret itself is never printed. */
  secrets: string[];
}

const isInsertMedia = (r: RecordedRequest): boolean => r.method === 'POST' && r.path.endsWith('VirtualMedia.InsertMedia');
const isPowerDown = (r: RecordedRequest): boolean => {
  if (isPowerChange(r)) return !/"target":\s*"power on"/.test(r.body);
  return r.method === 'POST' && r.path.endsWith('ComputerSystem.Reset') && !/"ResetType":\s*"(On|ForceOn)"/.test(r.body);
};

export interface CountInput {
  hosts: ChaosHost[];
  records: Map<string, HostRecord>;
  ironicRequests: RecordedRequest[];
  /** Each direct host's BMC proxy's requests, by its `bmc` index. */
  bmcRequests: RecordedRequest[][];
  ironic: IronicWatch;
  endedAt: number;
  /** Every workflow id of the run's hosts and their operations (`host/<ns>/<name>/<seq>-<kind>`). */
  workflowIds: string[];
  /** Per host, the API requests the driver sent again (and why). */
  resent: Map<string, string[]>;
}

const clock = (ms: number): string => new Date(ms).toISOString().slice(11, 23);

/** What stands behind a duplicate: the requests themselves, the host's operations of that kind, requests sent again. */
function evidence(input: CountInput, h: ChaosHost, nodes: Map<string, RecordedRequest[]>, kind: string): string {
  const reqs = [...nodes.values()].flat().map((r) => `${clock(r.at)} ${/"(?:target|ResetType)":\s*"([^"]+)"/.exec(r.body)?.[1] ?? r.path.split('/').pop()}${r.injected ? ` (${r.injected})` : ''}`);
  const ops = input.workflowIds.filter((id) => id.startsWith(`host/${h.key}/`) && id.endsWith(`-${kind}`)).map((id) => id.split('/').pop());
  const resent = (input.resent.get(h.key) ?? []).filter((r) => r.includes(kind === 'provision' ? '/image' : `/${kind}`));
  return `requests ${reqs.join(', ')}; ${kind} operations ${ops.join(', ') || 'none'}${resent.length ? `; ${resent.join('; ')}` : ''}`;
}

/** Requests that reached the peer, per node of each host (Ironic) or per BMC (direct hosts). */
function byNode(input: CountInput, h: ChaosHost, match: (r: RecordedRequest) => boolean, from = 0, to = Number.POSITIVE_INFINITY): Map<string, RecordedRequest[]> {
  const out = new Map<string, RecordedRequest[]>();
  const add = (node: string, r: RecordedRequest): void => void out.set(node, [...(out.get(node) ?? []), r]);
  if (h.kind === 'direct') {
    for (const r of input.bmcRequests[h.bmc!] ?? []) if (reachedPeer(r) && match(r) && r.at >= from && r.at <= to) add(`bmc ${h.bmc}`, r);
    return out;
  }
  for (const r of input.ironicRequests) {
    if (!reachedPeer(r) || !match(r) || r.at < from || r.at > to) continue;
    const owner = input.ironic.hostOfPath(r.path);
    if (owner?.host === h.key) add(owner.node, r);
  }
  return out;
}

export function countDeploys(input: CountInput): Counted {
  const c: Counted = { once: 0, twice: [], missing: [], retriedAfterFailure: [], servedByNewNode: [] };
  for (const h of input.hosts) {
    const rec = input.records.get(h.key)!;
    const nodes = byNode(input, h, h.kind === 'direct' ? isInsertMedia : isDeploy);
    let total = 0;
    let duplicate = false;
    let retried = false;
    for (const [node, reqs] of nodes) {
      total += reqs.length;
      for (let i = 1; i < reqs.length; i++) {
        // A deploy Ironic failed (e.g. it was killed mid-deploy) is retried: that is a new attempt, not a repeat.
        if (h.kind === 'fake' && input.ironic.seenIn(node, ['deploy failed'], reqs[i - 1]!.at, reqs[i]!.at)) retried = true;
        else duplicate = true;
      }
    }
    if (duplicate) c.twice.push(`${h.key}: ${total} deploys on ${nodes.size} node(s): ${evidence(input, h, nodes, 'provision')}`);
    else if (retried) c.retriedAfterFailure.push(h.key);
    else if (total === 0 && rec.steps.provisioned?.reachedAt) c.missing.push(h.key);
    else if (total > 0) c.once += 1;
  }
  return c;
}

export function countReboots(input: CountInput): Counted {
  const c: Counted = { once: 0, twice: [], missing: [], retriedAfterFailure: [], servedByNewNode: [] };
  for (const h of input.hosts) {
    const step = input.records.get(h.key)!.steps.rebooted;
    if (!step) continue;
    const nodes = byNode(input, h, isPowerDown, step.requestedAt, step.reachedAt ?? input.endedAt);
    const counts = [...nodes.values()].map((r) => r.length);
    const end = step.reachedAt ?? input.endedAt;
    const newNode = [...input.ironic.nodes.values()].some((n) => n.host === h.key && (n.states[0]?.at ?? 0) >= step.requestedAt && (n.states[0]?.at ?? 0) <= end);
    if (counts.some((n) => n > 1)) c.twice.push(`${h.key}: ${counts.join('+')} power-off requests during its reboot: ${evidence(input, h, nodes, 'reboot')}`);
    else if (counts.length === 0 && step.reachedAt && newNode) c.servedByNewNode.push(h.key);
    else if (counts.length === 0 && step.reachedAt) c.missing.push(h.key);
    else if (counts.length > 0) c.once += 1;
  }
  return c;
}

/** Hosts of a kind at an empty-database restart (provisioned, or mid-provisioning) that got a deploy after it. */
function reprovisioned(input: CountInput, wipes: Wipe[], which: 'active' | 'midProvisioning'): string[] {
  const out = new Set<string>();
  for (const w of wipes) {
    for (const key of w[which]) {
      const h = input.hosts.find((x) => x.key === key);
      if (h && byNode(input, h, isDeploy, w.at).size > 0) out.add(key);
    }
  }
  return [...out];
}

/** Planted secrets in log files, read from the offset each had when the run began. */
export function secretsInLogs(files: { path: string; from: number }[], secrets: string[], owner: (secret: string) => string): string[] {
  const hits: string[] = [];
  const longest = Math.max(1, ...secrets.map((s) => s.length));
  for (const { path, from } of files) {
    if (!existsSync(path)) continue;
    const fd = openSync(path, 'r');
    try {
      const size = statSync(path).size;
      const chunk = Buffer.alloc(4 << 20);
      let carry = '';
      for (let pos = from; pos < size; ) {
        const n = readSync(fd, chunk, 0, chunk.length, pos);
        if (n <= 0) break;
        pos += n;
        const text = carry + chunk.subarray(0, n).toString('utf8');
        for (const s of secrets) if (text.includes(s)) hits.push(`log ${path}: ${owner(s)}`);
        carry = text.slice(-longest);
      }
    } finally {
      closeSync(fd);
    }
  }
  return [...new Set(hits)];
}

export async function runChecks(
  input: CountInput & {
    wipes: Wipe[];
    temporal: Client;
    codecs: PayloadCodec[];
    secrets: string[];
    owner: (secret: string) => string;
    logs: { path: string; from: number }[];
    /** Ironic nodes of the run's namespaces still there at the end, by host. */
    leftNodes: string[];
  },
): Promise<Checks> {
  const records = [...input.records.values()];
  const history = await secretsInHistories(
    input.temporal,
    input.hosts.map((h) => hostWorkflowId({ namespace: h.namespace, name: h.name })),
    input.secrets,
    { codecs: input.codecs },
  );
  return {
    lost: [
      ...records.filter((r) => r.outcome === 'lost').map((r) => `${r.key}: ${r.detail}`),
      ...input.leftNodes.map((key) => `${key}: deleted, but its Ironic node was left behind`),
    ],
    stuck: records.filter((r) => r.outcome === 'stuck' || r.outcome === 'running').map((r) => `${r.key}: ${r.detail ?? 'still running'}`),
    deploys: countDeploys(input),
    reboots: countReboots(input),
    reprovisioned: reprovisioned(input, input.wipes, 'active'),
    redeployedMidProvisioning: reprovisioned(input, input.wipes, 'midProvisioning'),
    activeAtWipe: input.wipes.reduce((n, w) => n + w.active.length, 0),
    secrets: [
      ...[...new Set(history.hits.map((h) => `history ${h.where}: ${input.owner(h.secret)}`))],
      ...secretsInLogs(input.logs, input.secrets, input.owner),
    ],
  };
}

export function passed(c: Checks): boolean {
  return (
    c.lost.length === 0 &&
    c.stuck.length === 0 &&
    c.deploys.twice.length === 0 &&
    c.deploys.missing.length === 0 &&
    c.reboots.twice.length === 0 &&
    c.reboots.missing.length === 0 &&
    c.reprovisioned.length === 0 &&
    c.secrets.length === 0
  );
}
