/**
 * Reboot and power-off requests as callers send them (the API's reboot and power-off routes, the controller's
 * reboot annotations) and as the host reports them: Metal3's reboot annotation semantics, BMO's manageHostPower.
 * The host workflow applies them (workflows/host/rules/power-requests.ts).
 */
import type { FieldError } from '../model/field-error';

export type RebootMode = 'soft' | 'hard';
export const REBOOT_MODES: readonly RebootMode[] = ['soft', 'hard'];

export interface PowerRequests {
  /** A one-shot reboot waiting to run; `api` and `annotation` say who asked (both may). */
  reboot?: { mode: RebootMode; api: boolean; annotation: boolean };
  /**
   * The one-shot annotation's progress: `pending` until its reboot has run, then `done`
   * until the controller has removed the annotation (so it is never served twice).
   */
  annotation?: 'pending' | 'done';
  /** Keyed power-off requests and their mode. */
  holds: Record<string, RebootMode>;
  /** Bumped on every change, so an idle wait wakes up. */
  seq: number;
  /** Last time the periodic check found the host's power differing from what was recorded. */
  lastMismatch?: { at: string; observedOn: boolean; recordedOn: boolean };
  /**
   * The last REMEMBERED_REQUESTS one-shot reboot request ids (the API's Idempotency-Key): a
   * request sent again with one of them (a client retrying after the API died before it
   * answered) changes nothing. Carried across continue-as-new with the rest of the state.
   */
  requestIds?: string[];
}

export const REMEMBERED_REQUESTS = 32;

export type PowerRequestsView = Omit<PowerRequests, 'seq' | 'requestIds'>;

export interface PowerRequestChange {
  /**
   * One-shot reboot (API): merged into one already waiting (hard wins). Default soft.
   * `requestId`: the client's idempotency key; a reboot with a remembered id is not asked again.
   */
  reboot?: { mode?: RebootMode; requestId?: string };
  /** The `reboot.metal3.io` annotation as it stands now: present with its mode, or gone (null). */
  rebootAnnotation?: { mode?: RebootMode } | null;
  /** Keyed power-off requests to add or change. */
  holdOff?: Record<string, RebootMode>;
  /** Keys to release. */
  release?: string[];
  /** With holdOff: release every key not in it (the controller sends the annotations' full set). */
  onlyThese?: boolean;
}

export const emptyPowerRequests = (): PowerRequests => ({ holds: {}, seq: 0 });

export const powerRequestsView = (p: PowerRequests | undefined): PowerRequestsView => {
  const { seq: _seq, requestIds: _ids, ...view } = p ?? emptyPowerRequests();
  return view;
};

/** Kubernetes' annotation name part: what may follow `reboot.metal3.io/`. */
const KEY = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
/** An idempotency key: 1-255 visible ASCII characters (no spaces), as HTTP header values carry them. */
export const REQUEST_ID = /^[\x21-\x7e]{1,255}$/;
export const REQUEST_ID_RULE = '1-255 visible ASCII characters, no spaces';

/** Field errors of a change; the change is applied only when there are none. */
export function checkPowerRequestChange(change: unknown): FieldError[] {
  const errors: FieldError[] = [];
  if (typeof change !== 'object' || change === null || Array.isArray(change)) {
    return [{ field: '(root)', reason: 'must be an object' }];
  }
  const c = change as Record<string, unknown>;
  const known = ['reboot', 'rebootAnnotation', 'holdOff', 'release', 'onlyThese'];
  for (const k of Object.keys(c)) if (!known.includes(k)) errors.push({ field: k, reason: `is not accepted (accepted: ${known.join(', ')})` });
  const mode = (field: string, v: unknown): void => {
    if (v !== undefined && !REBOOT_MODES.includes(v as RebootMode)) {
      errors.push({ field, reason: `${JSON.stringify(v)} is not a reboot mode: use "soft" (shut down, hard if that fails) or "hard"` });
    }
  };
  const key = (field: string, k: string): void => {
    if (k.length > 63 || !KEY.test(k)) {
      errors.push({ field, reason: `${JSON.stringify(k)} is not a valid key: 1-63 letters, digits, "-", "_" or ".", starting and ending with a letter or digit` });
    }
  };
  for (const name of ['reboot', 'rebootAnnotation'] as const) {
    const v = c[name];
    if (v === undefined || (v === null && name === 'rebootAnnotation')) continue;
    if (typeof v !== 'object' || v === null || Array.isArray(v)) {
      errors.push({ field: name, reason: 'must be an object {"mode": "soft" | "hard"}' });
      continue;
    }
    mode(`${name}.mode`, (v as { mode?: unknown }).mode);
    const accepted = name === 'reboot' ? ['mode', 'requestId'] : ['mode'];
    for (const k of Object.keys(v)) if (!accepted.includes(k)) errors.push({ field: `${name}.${k}`, reason: `is not accepted (accepted: ${accepted.join(', ')})` });
    const id = (v as { requestId?: unknown }).requestId;
    if (name === 'reboot' && id !== undefined && (typeof id !== 'string' || !REQUEST_ID.test(id))) {
      errors.push({ field: 'reboot.requestId', reason: `must be ${REQUEST_ID_RULE}` });
    }
  }
  if (c.holdOff !== undefined) {
    if (typeof c.holdOff !== 'object' || c.holdOff === null || Array.isArray(c.holdOff)) {
      errors.push({ field: 'holdOff', reason: 'must map keys to "soft" or "hard"' });
    } else {
      for (const [k, v] of Object.entries(c.holdOff)) {
        key(`holdOff["${k}"]`, k);
        if (!REBOOT_MODES.includes(v as RebootMode)) mode(`holdOff["${k}"]`, v);
      }
    }
  }
  if (c.release !== undefined) {
    if (!Array.isArray(c.release) || c.release.some((k) => typeof k !== 'string')) errors.push({ field: 'release', reason: 'must be a list of keys' });
    else c.release.forEach((k: string, i) => key(`release[${i}]`, k));
  }
  if (c.onlyThese !== undefined && typeof c.onlyThese !== 'boolean') errors.push({ field: 'onlyThese', reason: 'must be true or false' });
  return errors;
}
