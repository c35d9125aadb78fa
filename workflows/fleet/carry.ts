/**
 * The fleet state a run hands to the next (continue-as-new), packed. As
 * plain objects 10,000 hosts with their selection are ~3.3 MB of JSON, over
 * the 2 MB a Temporal server accepts for a payload (`limit.blobSize.error`):
 * the continue-as-new would be refused and the operation lost. Packed, each
 * host is one short row (indexes into string tables, times as ms after the
 * selection), ~0.5 MB for the same fleet. Unpacking gives back exactly the
 * state that was packed.
 */
import type { HostRef } from '../../model/host';
import type { FleetHost, FleetHostOutcome, FleetSelection, FleetState } from '../../contracts/fleet';

/**
 * One host: [namespace, name, provisioningState, bmcType, outcome, startedAt, endedAt, flags, error, reason, site],
 * strings as indexes into `strings` (names too: the table dedupes nothing there, but keeps one row shape),
 * times in ms after `at` (-1: none), flags bit 0 changeSent, bit 1 aborting, error/reason/site -1 for none
 * (site: a selection that read no sites; a row packed before sites has no site column).
 */
type Row = [number, string, number, number, number, number, number, number, number, number, number?];

export interface PackedFleetState {
  packed: 1;
  at: string;
  missing: HostRef[];
  strings: string[];
  rows: Row[];
  paused?: FleetState['paused'];
  cancelled?: FleetState['cancelled'];
  halted?: FleetState['halted'];
  wave?: number;
  runs: number;
}

const OUTCOMES: readonly FleetHostOutcome[] = ['pending', 'inFlight', 'succeeded', 'failed', 'skipped', 'cancelled', 'notStarted'];

type Controls = Pick<FleetState, 'paused' | 'cancelled' | 'halted' | 'wave' | 'runs'>;

/** The run's count and its pause, cancel, halt and wave, as they are (the keys that are set only). */
function controls(x: Controls): Controls {
  return {
    runs: x.runs,
    ...(x.paused ? { paused: x.paused } : {}),
    ...(x.cancelled ? { cancelled: x.cancelled } : {}),
    ...(x.halted ? { halted: x.halted } : {}),
    ...(x.wave !== undefined ? { wave: x.wave } : {}),
  };
}

/** The packed form, or undefined when the state has no selection or its hosts are not the selection's, in order. */
export function packFleetState(s: FleetState): PackedFleetState | undefined {
  const sel = s.selection;
  if (!sel || sel.hosts.length !== s.hosts.length) return undefined;
  const base = Date.parse(sel.at);
  const strings: string[] = [];
  const index = new Map<string, number>();
  const str = (v: string | undefined): number => {
    if (v === undefined) return -1;
    let i = index.get(v);
    if (i === undefined) {
      i = strings.push(v) - 1;
      index.set(v, i);
    }
    return i;
  };
  const time = (v: string | undefined): number => (v === undefined ? -1 : Date.parse(v) - base);
  const rows: Row[] = [];
  for (let i = 0; i < s.hosts.length; i++) {
    const h = s.hosts[i]!;
    const picked = sel.hosts[i]!;
    if (h.ref.namespace !== picked.ref.namespace || h.ref.name !== picked.ref.name) return undefined;
    // A time before the selection cannot be written as an offset that reads back the same: keep such a state as it is.
    if ((h.startedAt !== undefined && time(h.startedAt) < 0) || (h.endedAt !== undefined && time(h.endedAt) < 0)) return undefined;
    const flags = (h.changeSent ? 1 : 0) | (h.aborting ? 2 : 0);
    rows.push([str(h.ref.namespace), h.ref.name, str(picked.provisioningState), str(picked.bmcType), OUTCOMES.indexOf(h.outcome), time(h.startedAt), time(h.endedAt), flags, str(h.error), str(h.reason), str(picked.site)]);
  }
  return {
    packed: 1,
    at: sel.at,
    missing: sel.missing,
    strings,
    rows,
    ...controls(s),
  };
}

export function unpackFleetState(p: PackedFleetState): FleetState {
  const base = Date.parse(p.at);
  const time = (ms: number): string | undefined => (ms < 0 ? undefined : new Date(base + ms).toISOString());
  const str = (i: number): string | undefined => (i < 0 ? undefined : p.strings[i]);
  const selected: FleetSelection['hosts'] = [];
  const hosts: FleetHost[] = [];
  for (const [ns, name, state, bmcType, outcome, startedAt, endedAt, flags, error, reason, site = -1] of p.rows) {
    const ref: HostRef = { namespace: str(ns)!, name };
    selected.push({ ref, provisioningState: str(state)!, bmcType: str(bmcType)!, ...(site >= 0 ? { site: str(site)! } : {}) });
    const h: FleetHost = { ref, outcome: OUTCOMES[outcome]! };
    const started = time(startedAt);
    const ended = time(endedAt);
    if (started !== undefined) h.startedAt = started;
    if (ended !== undefined) h.endedAt = ended;
    if (flags & 1) h.changeSent = true;
    if (flags & 2) h.aborting = true;
    if (error >= 0) h.error = str(error);
    if (reason >= 0) h.reason = str(reason);
    hosts.push(h);
  }
  return {
    selection: { at: p.at, hosts: selected, missing: p.missing },
    hosts,
    ...controls(p),
  };
}
