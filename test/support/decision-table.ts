/**
 * The host state machine's decisions over a fixed, seeded sample of host
 * states. decide() runs inside the host workflow: a change to what it answers
 * for a state an old run can be in changes the commands that run issues, and
 * its replay fails. The recorded table (test/fixtures/decisions/) pins what
 * every version decided; a new rule must leave it unchanged for the states it
 * holds, i.e. be switched on by something only new runs carry (a HostState
 * field set behind patched()).
 */
import { decide, nextStateAfter, specConflict } from '../../workflows/decide';
import type { HostDirectives, HostState, OperationKind } from '../../workflows/definitions';
import { PROVISIONING_STATES, type HostSpec } from '../../types/host';
import { hostState, testSpec } from './host-state';

/** mulberry32: a small seeded generator, so the sample is the same on every machine. */
function generator(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const IMAGE = { url: 'http://images.example/os.qcow2', checksum: 'a'.repeat(64) };
const LIVE_ISO = { url: 'http://images.example/live.iso', format: 'live-iso' as const };

/** Specs that differ in what decide() reads. */
const SPECS: Record<string, HostSpec | undefined> = {
  none: undefined,
  noBmc: { online: true },
  bare: testSpec(),
  off: testSpec({ online: false }),
  image: testSpec({ image: IMAGE }),
  imageOff: testSpec({ image: IMAGE, online: false }),
  external: testSpec({ externallyProvisioned: true }),
  noInspect: testSpec({ inspectionMode: 'disabled' }),
  fast: testSpec({ inspectionMode: 'fast', bmc: { address: 'redfish+http://127.0.0.1:1/redfish/v1/Systems/1', credentialsName: 'n0-bmc-secret' } }),
  direct: testSpec({ provisioner: 'direct', image: LIVE_ISO, bmc: { address: 'redfish+http://127.0.0.1:1/redfish/v1/Systems/1', credentialsName: 'n0-bmc-secret' } }),
  noPowerOff: testSpec({ disablePowerOff: true, image: IMAGE }),
};

const DETACH: Record<string, HostDirectives['detached'] | undefined> = {
  none: undefined,
  delete: { deleteAction: 'delete', force: false },
  delay: { deleteAction: 'delay', force: false },
  force: { deleteAction: 'delete', force: true },
};

const OPS: OperationKind[] = ['enroll', 'inspect', 'prepare', 'provision', 'deprovision', 'power', 'reboot', 'delete', 'detach'];

const pick = <T>(rnd: () => number, values: readonly T[]): T => values[Math.floor(rnd() * values.length)]!;

/** The states the recorded tables sampled from: a state added later would move every sample after it. */
const SAMPLED_STATES = PROVISIONING_STATES.filter((x) => x !== 'match profile' && x !== 'ready');

/** One sampled host state, with a key that says how it was built (stable across versions). */
function sample(rnd: () => number): { key: string; s: HostState } {
  const specName = pick(rnd, Object.keys(SPECS));
  const state = pick(rnd, SAMPLED_STATES);
  const s = hostState({ spec: SPECS[specName], state, ID: pick(rnd, ['', 'node-uuid']), poweredOn: rnd() < 0.5, deleteRequested: rnd() < 0.3 });
  const registered = pick(rnd, ['same', 'other', 'never'] as const);
  if (registered === 'other') s.registered = '["changed"]';
  if (registered === 'never') s.registered = undefined;
  const detachName = pick(rnd, Object.keys(DETACH));
  const credentials = pick(rnd, ['none', 'good', 'new'] as const);
  const directives: HostDirectives = {};
  if (DETACH[detachName]) directives.detached = DETACH[detachName];
  if (rnd() < 0.2) directives.inspectionDisabled = true;
  if (credentials !== 'none') {
    directives.credentials = { name: 'n0-bmc-secret', namespace: 'ns', version: credentials === 'good' ? '1' : '2' };
    s.status.goodCredentials = { credentials: { name: 'n0-bmc-secret', namespace: 'ns' }, credentialsVersion: '1' };
  }
  if (Object.keys(directives).length > 0) s.directives = directives;
  if (rnd() < 0.2) s.detached = true;
  if (rnd() < 0.2) s.needsAttach = true;
  if (rnd() < 0.2) s.inspectionRequested = true;
  const power = pick(rnd, ['none', 'soft', 'hard', 'hold', 'holdHard'] as const);
  if (power !== 'none') {
    s.power = { holds: {}, seq: 1 };
    if (power === 'soft' || power === 'hard') s.power.reboot = { mode: power, api: true, annotation: false };
    if (power === 'hold') s.power.holds = { maintenance: 'soft' };
    if (power === 'holdHard') s.power.holds = { remediation: 'hard' };
  }
  const key = [specName, state || '-', s.status.provisioning.ID ? 'id' : 'noid', s.status.poweredOn ? 'on' : 'off', s.deleteRequested ? 'del' : '',
    registered, detachName, s.directives?.inspectionDisabled ? 'noinsp' : '', credentials, s.detached ? 'detached' : '', s.needsAttach ? 'attach' : '',
    s.inspectionRequested ? 'reinspect' : '', power].join('|');
  return { key, s };
}

/** What the state machine answers for one state: the decision, where each operation leads, and conflicts. */
function answers(s: HostState): string {
  const decision = JSON.stringify(decide(s));
  const next = OPS.map((op) => nextStateAfter(op, s.status.provisioning.state, s)).join(',');
  const conflicts = OPS.map((op) => (specConflict(s, SPECS.image!, op) ?? '') + '/' + (specConflict(s, SPECS.direct!, op) ?? '')).join(';');
  return `${decision} => ${next} ! ${conflicts}`;
}

export const DECISION_SEED = 20261123;
export const DECISION_SAMPLES = 3000;

/** key → answers; a key seen twice keeps its first answers (identical states). */
export function decisionTable(seed = DECISION_SEED, count = DECISION_SAMPLES): Record<string, string> {
  const rnd = generator(seed);
  const table: Record<string, string> = {};
  for (let i = 0; i < count; i++) {
    const { key, s } = sample(rnd);
    table[key] ??= answers(s);
  }
  return table;
}
