/**
 * A fixture provisioner for tier 0: the activities the host workflow calls for
 * an Ironic host (registration, inspection, deploy, clean, teardown, power,
 * settling a cancelled wait), held in memory, each outcome scriptable by the
 * test. It stands in for Ironic only in tests of the workflow's own timing
 * (backoff, retry limits, continue-as-new, cancellation, pause, idle checks) on
 * the time-skipping server (test/support/host-time-skipping.ts); what Ironic
 * itself does with each request is tier 1's, against the real Ironic.
 *
 * Typed against the real activity interfaces (`IronicActivities`,
 * `SettleActivities`, `PowerActivities`), so a changed activity signature
 * fails the type check here instead of leaving a fixture that no longer
 * matches what the workflow calls.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { IronicActivities } from '../../activities/ironic/activities';
import type { SettleActivities } from '../../activities/ironic/settle';
import type { PowerActivities } from '../../activities/power/activities';
import { NON_RETRYABLE_FAILURES, type FailureType } from '../../model/failures';
import type { HostRef } from '../../model/host';

type IronicSide = Pick<
  IronicActivities,
  | 'ensureNode'
  | 'manageNode'
  | 'adoptNode'
  | 'inspectNode'
  | 'prepareNode'
  | 'provideNode'
  | 'deployNode'
  | 'undeployNode'
  | 'cleanNode'
  | 'serviceNode'
  | 'setPower'
  | 'deleteNode'
  | 'detachNode'
  | 'syncNodeSettings'
>;

/** What the host workflow asks of an Ironic host's provisioner, as the worker registers it. */
export type FixtureActivities = IronicSide & SettleActivities & PowerActivities;
export type FixtureActivity = keyof FixtureActivities;

/**
 * What a scripted call does instead of succeeding:
 * - `fail`: throws the typed failure the real activity throws for a peer's refusal (model/failures.ts),
 *   final or retried by the activity's retry policy as the type says;
 * - `hang`: waits as a wait on Ironic does, heartbeating, until the workflow cancels it (then the
 *   node rests in its wait state, as Ironic's does, for `settleNode` to abort).
 */
export type Outcome = { kind: 'fail'; type: FailureType; message: string } | { kind: 'hang' };

export interface FixtureNode {
  nodeId: string;
  host: string;
  provisionState: string;
  poweredOn: boolean;
}

export interface FixtureCall {
  activity: FixtureActivity;
  /** The host's name (HostRef.name). */
  host: string;
  /** How the call ended: `ok`, `failed`, `cancelled`, or `hanging` while it waits. */
  result: 'ok' | 'failed' | 'cancelled' | 'hanging';
}

interface Rule {
  activity: FixtureActivity;
  host?: string;
  outcome: Outcome;
  times: number;
}

/** The wait state Ironic leaves a node in while each step waits for its agent, and where an abort leaves it. */
const WAITS: Partial<Record<FixtureActivity, { wait: string; aborted: string }>> = {
  deployNode: { wait: 'wait call-back', aborted: 'deploy failed' },
  inspectNode: { wait: 'inspect wait', aborted: 'inspect failed' },
  cleanNode: { wait: 'clean wait', aborted: 'clean failed' },
  prepareNode: { wait: 'clean wait', aborted: 'clean failed' },
  serviceNode: { wait: 'service wait', aborted: 'service failed' },
};
/** Where a failed step leaves the node (Ironic's failed states). */
const FAILED: Partial<Record<FixtureActivity, string>> = {
  deployNode: 'deploy failed',
  inspectNode: 'inspect failed',
  cleanNode: 'clean failed',
  prepareNode: 'clean failed',
  undeployNode: 'clean failed',
  serviceNode: 'service failed',
};

export interface FixtureProvisioner {
  readonly activities: FixtureActivities;
  /**
   * The next calls of `activity` (for `host` only, when given) end as `outcome`, `times` times
   * (every time unless given). Rules are used in the order scripted: a rule used up gives way to the next.
   */
  script(activity: FixtureActivity, outcome: Outcome, opts?: { host?: string; times?: number }): void;
  /** Ends the host's hanging calls of `activity`: succeeding (the node moves as it would have), or as `outcome`. */
  release(host: string, activity: FixtureActivity, outcome?: Extract<Outcome, { kind: 'fail' }>): number;
  /** Calls end normally again (for `host` only, when given). */
  clear(opts?: { activity?: FixtureActivity; host?: string }): void;
  /** The calls so far, in order (those of `host`, when given). */
  calls(host?: string): FixtureCall[];
  /** The host's node, undefined once deleted. */
  node(host: string): FixtureNode | undefined;
  /** The node's power changed behind metalflow's back. */
  setNodePower(host: string, on: boolean): void;
}

export function fixtureProvisioner(): FixtureProvisioner {
  const nodes = new Map<string, FixtureNode>();
  const rules: Rule[] = [];
  const log: FixtureCall[] = [];
  const hanging: { call: FixtureCall; end: (outcome: Extract<Outcome, { kind: 'fail' }> | undefined) => void }[] = [];

  const byId = (nodeId: string | undefined): FixtureNode | undefined => [...nodes.values()].find((n) => n.nodeId === nodeId);
  const summary = (n: FixtureNode) => ({ nodeId: n.nodeId, provisionState: n.provisionState, poweredOn: n.poweredOn });
  const mustGet = (nodeId: string): FixtureNode => {
    const n = byId(nodeId);
    if (!n) throw ApplicationFailure.create({ type: 'IronicNodeGone', nonRetryable: true, message: `Ironic node ${nodeId} not found` });
    return n;
  };

  /** A step that leaves the node in `to` (and powered as `poweredOn` says, when it says). */
  const moving =
    (activity: FixtureActivity, to: string, poweredOn?: boolean) =>
    async ({ ref, nodeId }: { ref: HostRef; nodeId: string }) => {
      const n = mustGet(nodeId);
      return run(activity, ref, n, () => {
        n.provisionState = to;
        if (poweredOn !== undefined) n.poweredOn = poweredOn;
        return summary(n);
      });
    };

  /** Runs a call: a scripted outcome first, else `ok` (the node moves as Ironic's would). */
  async function run<T>(activity: FixtureActivity, ref: HostRef, node: FixtureNode | undefined, ok: () => T): Promise<T> {
    const call: FixtureCall = { activity, host: ref.name, result: 'ok' };
    log.push(call);
    const rule = rules.find((r) => r.activity === activity && (r.host === undefined || r.host === ref.name) && r.times > 0);
    if (!rule) return ok();
    rule.times -= 1;
    const fail = (outcome: Extract<Outcome, { kind: 'fail' }>): never => {
      call.result = 'failed';
      const failedState = FAILED[activity];
      if (node && failedState) node.provisionState = failedState;
      throw ApplicationFailure.create({ type: outcome.type, message: outcome.message, nonRetryable: NON_RETRYABLE_FAILURES.includes(outcome.type) });
    };
    if (rule.outcome.kind === 'fail') return fail(rule.outcome);
    call.result = 'hanging';
    const wait = WAITS[activity];
    if (node && wait) node.provisionState = wait.wait;
    const ctx = Context.current();
    // Heartbeats carry the cancellation to the activity, as the real waits' heartbeats do.
    const beat = setInterval(() => ctx.heartbeat(), 500);
    let entry: (typeof hanging)[number] | undefined;
    try {
      const released = new Promise<Extract<Outcome, { kind: 'fail' }> | undefined>((resolve) => {
        entry = { call, end: resolve };
        hanging.push(entry);
      });
      const ended = await Promise.race([ctx.cancelled, released]);
      if (ended) return fail(ended);
      call.result = 'ok';
      return ok();
    } catch (err) {
      if (call.result === 'hanging') call.result = 'cancelled';
      throw err;
    } finally {
      clearInterval(beat);
      if (entry) hanging.splice(hanging.indexOf(entry), 1);
    }
  }

  const activities: FixtureActivities = {
    async ensureNode({ ref, nodeId }) {
      const existing = nodes.get(ref.name) ?? (nodeId ? byId(nodeId) : undefined);
      return run('ensureNode', ref, existing, () => {
        const n = existing ?? { nodeId: `fixture-${ref.namespace}-${ref.name}`, host: ref.name, provisionState: 'enroll', poweredOn: false };
        nodes.set(ref.name, n);
        return summary(n);
      });
    },
    manageNode: moving('manageNode', 'manageable'),
    adoptNode: moving('adoptNode', 'active'),
    async inspectNode({ ref, nodeId }) {
      const n = mustGet(nodeId);
      return run('inspectNode', ref, n, () => {
        n.provisionState = 'manageable';
        return { hardware: { hostname: n.host, ramMebibytes: 4096, cpu: { arch: 'x86_64', count: 2 } } };
      });
    },
    prepareNode: moving('prepareNode', 'manageable'),
    provideNode: moving('provideNode', 'available'),
    deployNode: moving('deployNode', 'active', true),
    undeployNode: moving('undeployNode', 'available', false),
    cleanNode: moving('cleanNode', 'manageable'),
    serviceNode: moving('serviceNode', 'active'),
    async setPower({ ref, nodeId, on }) {
      const n = byId(nodeId) ?? nodes.get(ref.name);
      return run('setPower', ref, n, () => {
        if (!n) return { nodeId: nodeId ?? '', provisionState: '', poweredOn: false, found: false };
        n.poweredOn = on;
        return { ...summary(n), found: true };
      });
    },
    async deleteNode({ ref, nodeId }) {
      const n = byId(nodeId) ?? nodes.get(ref.name);
      return run('deleteNode', ref, n, () => {
        if (n) nodes.delete(n.host);
        return { deleted: n !== undefined };
      });
    },
    async detachNode({ ref, nodeId }) {
      const n = byId(nodeId) ?? nodes.get(ref.name);
      return run('detachNode', ref, n, () => {
        if (n) nodes.delete(n.host);
        return { deleted: n !== undefined };
      });
    },
    async syncNodeSettings({ ref, nodeId }) {
      return run('syncNodeSettings', ref, byId(nodeId), () => ({ changed: [] }));
    },
    async settleNode({ ref, nodeId }) {
      const n = byId(nodeId);
      return run('settleNode', ref, n, () => {
        if (!n) return { provisionState: '', aborted: false };
        const abortable = Object.values(WAITS).find((w) => w.wait === n.provisionState);
        if (abortable) n.provisionState = abortable.aborted;
        return { provisionState: n.provisionState, aborted: abortable !== undefined };
      });
    },
    async readHostPower({ ref, nodeId }) {
      const n = byId(nodeId);
      return run('readHostPower', ref, n, () => (n ? { poweredOn: n.poweredOn } : nodeId ? { nodeGone: true as const } : {}));
    },
    async changeNodePower({ ref, nodeId, action }) {
      const n = mustGet(nodeId);
      return run('changeNodePower', ref, n, () => {
        n.poweredOn = action !== 'off';
        return { poweredOn: n.poweredOn, sent: action === 'reboot' ? ['power off', 'power on'] : [action === 'on' ? 'power on' : 'power off'] };
      });
    },
    async idleFence() {},
  };

  return {
    activities,
    script(activity, outcome, opts = {}) {
      rules.push({ activity, outcome, times: opts.times ?? Number.POSITIVE_INFINITY, ...(opts.host ? { host: opts.host } : {}) });
    },
    release(host, activity, outcome) {
      const ending = hanging.filter((h) => h.call.host === host && h.call.activity === activity);
      for (const h of ending) h.end(outcome);
      return ending.length;
    },
    clear(opts = {}) {
      for (let i = rules.length - 1; i >= 0; i--) {
        const r = rules[i]!;
        if ((opts.activity === undefined || r.activity === opts.activity) && (opts.host === undefined || r.host === opts.host)) rules.splice(i, 1);
      }
    },
    calls: (host) => log.filter((c) => host === undefined || c.host === host).map((c) => ({ ...c })),
    node: (host) => {
      const n = nodes.get(host);
      return n ? { ...n } : undefined;
    },
    setNodePower(host, on) {
      const n = nodes.get(host);
      if (!n) throw new Error(`no fixture node for ${host}`);
      n.poweredOn = on;
    },
  };
}
