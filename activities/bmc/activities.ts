/**
 * Activities that speak to BMCs directly (Redfish, IPMI): the enrollment
 * pre-flight, power and reboot for hosts Ironic does not manage, out-of-band
 * inventory, boot override and virtual media. Credentials are read from the
 * secret store at the moment of use and a connection (Redfish session) lives
 * only for one activity attempt.
 *
 * Every activity is idempotent: power and media calls read the current state
 * first, so a retry after a worker died mid-call converges instead of
 * repeating a reset. A BMC error becomes a failure whose message names the
 * cause (DNS, refused, TLS, 401, unknown system); kinds that may pass on their
 * own (unreachable, BMC fault, timeout) are retryable, an answer metalflow
 * cannot read is an InternalError, the rest end the operation at once.
 *
 * A slow BMC is bounded by its own request timeouts, never by the activity's
 * heartbeat timeout: every call heartbeats while it connects, reads the
 * inventory, follows a Redfish task or waits for power, and the activity's
 * cancellation reaches the client (the request is aborted, ipmitool killed,
 * the wait ended) so a cancelled call stops at once and reports cancelled.
 */
import { ApplicationFailure, CancelledFailure, log } from '@temporalio/activity';
import { parseBmcAddress, type BmcAccess } from '../../model/bmc';
import { FAILURE } from '../../model/failures';
import { bmcOf, type HardwareDetails, type HostRef, type HostSpec } from '../../model/host';
import { activityContext, heartbeat, keepAlive, pause } from '../common/activity-context';
import {
  checkBmc,
  isBmcError,
  openBmc,
  RedfishBmc,
  type BmcClient,
  type BootDevice,
  type OpenBmcOptions,
  type PowerState,
  type PowerTarget,
  type RebootMode,
} from '../../clients/bmc/bmc-client';
import type { SecretReader } from '../../clients/secrets/secret-store';
import { readCredentials } from '../common/secret-key';
import { toFailure } from '../common/failures';
import { RedfishError } from '../../clients/bmc/errors';
import { applyBios, type BiosApplyResult } from '../../clients/redfish/bios';
import { biosSettings } from '../../clients/ironic/clean-steps';
import type { CleanStep } from '../../model/clean';
import { componentOf, findUpdateTask, firmwareInventory, prepareSimpleUpdate, startSimpleUpdate, type FirmwareComponentKind } from '../../clients/redfish/firmware';

/** What a firmware update's attempt leaves for its retry: the task the BMC accepted, and the version before it. */
export interface FirmwareProgress {
  task: string;
  before?: string;
}

const firmwareProgressOf = (v: unknown): FirmwareProgress | undefined => {
  if (typeof v !== 'object' || v === null) return undefined;
  const { task, before } = v as Record<string, unknown>;
  return typeof task === 'string' && task !== '' ? { task, ...(typeof before === 'string' ? { before } : {}) } : undefined;
};

/** How long a BMC may stay unreachable while it flashes (real BMCs reset themselves for minutes). */
const FIRMWARE_OUTAGE_MS = 10 * 60_000;
/** How far the BMC's clock may lag the worker's when a task's start is compared with the activity's. */
const TASK_CLOCK_MARGIN_MS = 5 * 60_000;

export interface BmcActivityDeps {
  secrets: SecretReader;
  /** Where BMC credentials are read when not from `secrets`: a site's own store (`"secrets": "site"`, docs/sites.md). */
  bmcSecrets?: SecretReader;
  /** Per BMC request; default 30 s (real BMCs answer a session or inventory read in seconds, sometimes tens). */
  timeoutMs?: number;
  /** Heartbeat period while a BMC call runs; default 5 s (the workflows' heartbeat timeouts are 30 s and more). */
  heartbeatMs?: number;
  /** How long a power change may take to show; default 120 s. */
  powerTimeoutMs?: number;
  /** Poll interval while waiting for a power state; default 1 s. */
  pollIntervalMs?: number;
  /**
   * How long a power request whose answer never came (or that a killed attempt may have sent) is given to show
   * on the BMC before it is sent again; default two request timeouts.
   */
  landingMs?: number;
  /** CA bundle (PEM) https Redfish BMCs are verified against instead of the system's (METALFLOW_BMC_CACERT_FILE). */
  ca?: Buffer;
}

export interface BmcTarget {
  ref: HostRef;
  /** References only: the password is read from `spec.bmc.credentialsName` here. */
  spec: HostSpec;
}

export interface BmcMediaState {
  inserted: boolean;
  image?: string;
}

export interface BmcPowerResult {
  poweredOn: boolean;
  /** What the BMC reported last (a transition state when not waiting). */
  state: PowerState;
}

function access(spec: HostSpec): BmcAccess {
  const parsed = parseBmcAddress(bmcOf(spec).address);
  if (!parsed.ok) throw ApplicationFailure.nonRetryable(parsed.errors.map((e) => `${e.field}: ${e.reason}`).join('; '), FAILURE.operationFailed);
  return parsed.value;
}

/** BMC errors (and any other) as the failures the workflows branch on (activities/common/failures.ts). */
function translate(err: unknown): never {
  throw toFailure(err);
}

type BiosStep = Extract<CleanStep, { name: 'bios' }>;

const isOn = (state: PowerState): boolean => state === 'on' || state === 'powering-on';

/**
 * Runs one BMC call as an activity: heartbeats until it ends, hands it the
 * activity's cancellation signal, and reports a cancellation as such (the
 * SDK's CancelledFailure), every other error as a typed BMC failure.
 */
async function bmcCall<T>(heartbeatMs: number, fn: (signal: AbortSignal | undefined) => Promise<T>, onError: (err: unknown) => never = translate): Promise<T> {
  const ctx = activityContext();
  const stop = keepAlive(heartbeatMs);
  try {
    return await fn(ctx?.cancellationSignal);
  } catch (err) {
    if (ctx?.cancellationSignal.aborted) throw err;
    return onError(err);
  } finally {
    stop();
  }
}

/** Credentials read at the moment of use, the BMC opened for one call and closed after it (every BMC activity's frame). */
export function bmcSessions(deps: BmcActivityDeps) {
  const timeoutMs = deps.timeoutMs ?? 30_000;
  const heartbeatMs = deps.heartbeatMs ?? 5_000;

  async function credentials(t: BmcTarget) {
    const name = bmcOf(t.spec).credentialsName;
    return readCredentials(deps.bmcSecrets ?? deps.secrets, t.ref.namespace, name);
  }

  const options = (t: BmcTarget, signal: AbortSignal | undefined): OpenBmcOptions => ({
    disableCertificateVerification: bmcOf(t.spec).disableCertificateVerification,
    timeoutMs,
    ...(deps.ca ? { redfish: { ca: deps.ca } } : {}),
    ...(signal ? { signal } : {}),
  });

  /** Opens the BMC, runs `fn`, closes (ends the Redfish session) whatever happens. */

  async function withBmc<T>(t: BmcTarget, fn: (bmc: BmcClient) => Promise<T>): Promise<T> {
    return bmcCall(heartbeatMs, async (signal) => {
      let bmc: BmcClient | undefined;
      try {
        bmc = await openBmc(access(t.spec), await credentials(t), options(t, signal));
        return await fn(bmc);
      } finally {
        await bmc?.close().catch(() => undefined);
      }
    });
  }
  return { credentials, options, withBmc, heartbeatMs };
}

/**
 * What a setBmcPower attempt sent, in its heartbeat details: the requests the BMC answered (`sent`), one that
 * went out without an answer (`unanswered`), and `ended` once the attempt failed (its last word, which the
 * SDK hands to the retry with the failure). An attempt killed with its worker leaves no `ended`.
 */
export interface BmcPowerRecord {
  attempt: number;
  sent: PowerTarget[];
  /** A request that went out with no answer (its target), or a killed attempt's unknown (no target), since `at` (ms). */
  unanswered?: { target?: PowerTarget; at: number };
  state?: string;
  ended?: true;
}

/**
 * What an attempt takes over from the one before: its record when that attempt ended with its last word; when it
 * did not (killed, or timed out by the server), whatever it recorded plus an unknown request from now.
 */
export function carriedPowerRecord(info: { attempt: number; heartbeatDetails?: unknown } | undefined, now = Date.now()): Pick<BmcPowerRecord, 'sent' | 'unanswered'> {
  if (!info || info.attempt <= 1) return { sent: [] };
  const d = info.heartbeatDetails as Partial<BmcPowerRecord> | undefined;
  const sent = Array.isArray(d?.sent) ? d.sent.filter((t): t is PowerTarget => t === 'on' || t === 'off' || t === 'soft-off') : [];
  const u = d?.unanswered;
  if (d?.ended === true && d.attempt === info.attempt - 1) {
    return { sent, ...(u && typeof u.at === 'number' ? { unanswered: { ...(u.target ? { target: u.target } : {}), at: Math.min(u.at, now) } } : {}) };
  }
  return { sent, unanswered: { at: now } };
}

export function createBmcActivities(deps: BmcActivityDeps) {
  const power = { timeoutMs: deps.powerTimeoutMs ?? 120_000, pollIntervalMs: deps.pollIntervalMs ?? 1000 };
  const landingMs = deps.landingMs ?? 2 * (deps.timeoutMs ?? 30_000);
  const { credentials, options, withBmc, heartbeatMs } = bmcSessions(deps);

  /** Power polls are progress worth a retry's knowing: the keep-alive beats repeat the last one. */
  const onPoll = (state: string | undefined): void => heartbeat({ state });

  /** Reachable, credentials accepted, system exists: before Ironic is touched. */
  async function preflightBmc(t: BmcTarget): Promise<{ power: PowerState }> {
    const badCredentials = (err: unknown): never => {
      // Name the Secret, so a user who just changed it knows where to look (never its content).
      if (isBmcError(err) && err.kind === 'bad-credentials') {
        const secret = `${t.ref.namespace}/${bmcOf(t.spec).credentialsName}`;
        throw ApplicationFailure.nonRetryable(`the BMC rejected the credentials in Secret ${secret}: ${err.message}`, FAILURE.operationFailed, {
          kind: err.kind,
        });
      }
      return translate(err);
    };
    return bmcCall(heartbeatMs, async (signal) => ({ power: await checkBmc(access(t.spec), await credentials(t), options(t, signal)) }), badCredentials);
  }

  async function getBmcPower(t: BmcTarget): Promise<BmcPowerResult> {
    return withBmc(t, async (bmc) => {
      const state = await bmc.getPower();
      return { poweredOn: isOn(state), state };
    });
  }

  /**
   * Level-triggered and sent once: nothing is sent when the host already is (or is going) where asked, and a
   * request the BMC accepted is never sent again. `soft` off asks the OS to shut down and falls back to a hard
   * off when it has not within `softTimeoutMs` (or when the BMC cannot do it).
   *
   * What each attempt sent travels in its heartbeat details (BmcPowerRecord), which a failed attempt hands to
   * its retry with its failure. A request whose answer never came (the connection closed or timed out under
   * it), or an attempt that left no last word (its worker was killed: what it sent is unknown), is given
   * `landingMs` to show on the BMC before anything is sent: a BMC may carry a change out seconds after it
   * answered, or after the client gave up on the answer.
   */
  async function setBmcPower(
    input: BmcTarget & { on: boolean; mode?: RebootMode; /** Soft off: hard after this long; default the power timeout. */ softTimeoutMs?: number },
  ): Promise<BmcPowerResult> {
    const ctx = activityContext();
    const carried = carriedPowerRecord(ctx?.info);
    const sent = [...carried.sent];
    let blind = carried.unanswered;
    const record = (state?: string, ended?: true): BmcPowerRecord => ({
      attempt: ctx?.info.attempt ?? 1,
      sent,
      ...(blind ? { unanswered: blind } : {}),
      ...(state ? { state } : {}),
      ...(ended ? { ended } : {}),
    });
    const beat = (state?: string): void => heartbeat(record(state));
    const want: 'on' | 'off' = input.on ? 'on' : 'off';
    const going: PowerState = input.on ? 'powering-on' : 'powering-off';
    beat();
    try {
      return await withBmc(input, async (bmc) => {
        for (;;) {
          const state = await bmc.getPower();
          if (state === want) return { poweredOn: input.on, state };
          if (state === going) {
            await bmc.waitPower(want, { ...power, onPoll: beat });
            continue;
          }
          if (blind) {
            // A request that may still land: the BMC has its time to show it before anything is sent.
            if (Date.now() - blind.at < landingMs) {
              beat(state);
              await pause(power.pollIntervalMs);
              continue;
            }
            log.warn(`BMC power ${blind.target ?? 'request'} of host ${input.ref.namespace}/${input.ref.name} has not shown since it went out (the host is ${state}); sending it`);
            const at = blind.target ? sent.lastIndexOf(blind.target) : -1;
            if (at >= 0) sent.splice(at, 1);
            blind = undefined;
          }
          const next: PowerTarget = input.on ? 'on' : input.mode === 'soft' && !sent.includes('soft-off') ? 'soft-off' : 'off';
          if (sent.includes(next)) {
            throw ApplicationFailure.nonRetryable(`the BMC accepted power ${next} and the host is still ${state}; not sent again`, FAILURE.operationFailed, { kind: 'timeout' });
          }
          // A cancelled attempt (or one the server gave up on, still running) never sends: its retry has the host.
          if (ctx?.cancellationSignal.aborted) throw new CancelledFailure(`the activity was cancelled before it sent power ${next}`);
          try {
            await bmc.requestPower(next);
          } catch (err) {
            if (ctx?.cancellationSignal.aborted) throw err;
            // No soft off on this BMC: hard, as Metal3 does.
            if (next === 'soft-off' && isBmcError(err) && err.kind === 'unsupported') {
              sent.push(next);
              beat(state);
              continue;
            }
            // Gone out with no answer: carried out, still to be, or lost; the reads from now on decide.
            if (isBmcError(err) && err.kind === 'unreachable') {
              sent.push(next);
              blind = { target: next, at: Date.now() };
              beat(state);
              continue;
            }
            throw err;
          }
          sent.push(next);
          beat(state);
          try {
            await bmc.waitPower(want, { ...power, ...(next === 'soft-off' ? { timeoutMs: input.softTimeoutMs ?? power.timeoutMs } : {}), onPoll: beat });
          } catch (err) {
            // The OS did not shut down in time: hard off next.
            if (next === 'soft-off' && isBmcError(err) && err.kind === 'timeout') continue;
            throw err;
          }
        }
      });
    } catch (err) {
      // The attempt's last word, handed to its retry with the failure: what it sent, and nothing after.
      heartbeat(record(undefined, true));
      throw err;
    }
  }

  /** Out-of-band inventory (Redfish): seconds instead of an agent boot. */
  async function inspectBmc(input: BmcTarget): Promise<{ hardware: HardwareDetails }> {
    return withBmc(input, async (bmc) => {
      if (!bmc.getInventory) {
        throw ApplicationFailure.nonRetryable(
          `BMC ${bmcOf(input.spec).address} speaks ${bmc.protocol}, which has no out-of-band inventory; use a Redfish address or agent inspection`,
          FAILURE.operationFailed,
          { kind: 'unsupported' },
        );
      }
      return { hardware: await bmc.getInventory() };
    });
  }

  /** Boot override; setting the same device twice is harmless on both protocols. */
  async function setBmcBootDevice(
    input: BmcTarget & { device: BootDevice; persistent?: boolean; mode?: 'UEFI' | 'Legacy' },
  ): Promise<void> {
    return withBmc(input, (bmc) => bmc.setBootDevice(input.device, { persistent: input.persistent, mode: input.mode }));
  }

  /** Inserts `imageUrl` in the CD slot; the client checks what is inserted, so a retry is a no-op. */
  async function insertBmcMedia(input: BmcTarget & { imageUrl: string }): Promise<void> {
    return withBmc(input, async (bmc) => {
      if (!bmc.insertMedia) {
        throw ApplicationFailure.nonRetryable(
          `BMC ${bmcOf(input.spec).address} speaks ${bmc.protocol}, which has no virtual media; a live ISO needs a Redfish BMC`,
          FAILURE.operationFailed,
          { kind: 'unsupported' },
        );
      }
      await bmc.insertMedia(input.imageUrl);
    });
  }

  async function ejectBmcMedia(input: BmcTarget): Promise<void> {
    return withBmc(input, async (bmc) => {
      await bmc.ejectMedia?.();
    });
  }

  /** What the CD slot holds, for checking a virtual-media boot (`undefined` on IPMI: no virtual media). */
  async function getBmcMedia(input: BmcTarget): Promise<BmcMediaState | undefined> {
    return withBmc(input, async (bmc) => {
      if (!(bmc instanceof RedfishBmc)) return undefined;
      const slot = await bmc.redfish.getVirtualMedia();
      return { inserted: slot.inserted, image: slot.image };
    });
  }

  /** The Redfish client of a host whose step needs Redfish (BIOS, firmware): IPMI has neither. */
  const redfishOf = (input: BmcTarget, bmc: BmcClient, what: string) => {
    if (bmc instanceof RedfishBmc) return bmc.redfish;
    throw ApplicationFailure.nonRetryable(
      `BMC ${bmcOf(input.spec).address} speaks ${bmc.protocol}, which has no ${what}; it needs a Redfish BMC`,
      FAILURE.operationFailed,
      { kind: 'unsupported' },
    );
  };

  /**
   * BIOS settings by the BMC's attribute names: those the BIOS lacks go
   * pending, the host reboots (and is left powered as it was), and the BIOS is
   * read back. Level-triggered: a BIOS that already shows them all is left
   * alone (no PATCH, no reboot), so a retry after the reboot sends nothing.
   */
  async function applyBmcBios(input: BmcTarget & { bios: Pick<BiosStep, 'firmware' | 'settings'> }): Promise<BiosApplyResult & { poweredOn: boolean }> {
    // Metal3's spec.firmware flags by the iDRAC names, as on the Ironic path; the BMC's own names win.
    const want = Object.fromEntries(biosSettings(input.bios).map(({ name, value }) => [name, value]));
    return withBmc(input, async (bmc) => {
      const redfish = redfishOf(input, bmc, 'BIOS settings');
      const result = await applyBios(redfish, want, { timeoutMs: power.timeoutMs, pollIntervalMs: power.pollIntervalMs, onPoll: () => onPoll('bios') });
      return { ...result, poweredOn: isOn(await bmc.getPower()) };
    });
  }

  /**
   * One firmware image through UpdateService.SimpleUpdate, followed to the
   * end of its task, with the component's version before and after from the
   * firmware inventory. Sent at most once per activity, whatever its retries
   * meet: a component that already reports the step's `version` is left
   * alone; the task the BMC accepted is recorded in the heartbeat details
   * and a retry follows it; a retry that finds no record (its worker died
   * before the heartbeat left) looks for the update's task in the BMC's task
   * collection first; and a BMC that resets itself while it flashes is
   * waited for instead of failing the attempt. The URL's query (a pre-signed
   * URL's signature) never reaches an error or the result.
   */
  async function updateBmcFirmware(
    input: BmcTarget & { component: FirmwareComponentKind; url: string; version?: string },
  ): Promise<{ component: FirmwareComponentKind; before?: string; after?: string; skipped?: true }> {
    return withBmc(input, async (bmc) => {
      const redfish = redfishOf(input, bmc, 'firmware update service');
      const versionOf = async () => componentOf(await firmwareInventory(redfish), input.component, redfish.systemPath);
      const ctx = activityContext();
      const recorded = firmwareProgressOf(ctx?.info.heartbeatDetails);
      const now = await versionOf();
      const before = recorded ? recorded.before : now?.version;
      if (!recorded && input.version !== undefined && now?.version === input.version) {
        return { component: input.component, before: now.version, after: now.version, skipped: true };
      }
      const what = `SimpleUpdate ${input.component}`;
      let task = recorded?.task;
      try {
        if (task === undefined) {
          const update = await prepareSimpleUpdate(redfish, { imageUri: input.url, ...(now ? { targets: [now.path] } : {}) });
          // The activity's first schedule bounds what can be its own task: an older one for the same image was another request's.
          const since = (ctx?.info.scheduledTimestampMs ?? Date.now()) - TASK_CLOCK_MARGIN_MS;
          task = (await findUpdateTask(redfish, update, since))?.monitor ?? (await startSimpleUpdate(redfish, update));
          if (task !== undefined) heartbeat({ task, ...(before !== undefined ? { before } : {}) } satisfies FirmwareProgress);
        }
        if (task !== undefined) await redfish.followTaskAt(task, what, { failKind: 'task-failed', outageMs: FIRMWARE_OUTAGE_MS });
      } catch (err) {
        // Accepted, then the BMC forgot the task (a reset may clear its task list): its inventory says whether it took the image.
        if (task === undefined || !(isBmcError(err) && err.status === 404)) throw withoutQuery(err, input.url);
        const after = (await versionOf())?.version;
        if (after !== before && (input.version === undefined || after === input.version)) return { component: input.component, before, after };
        throw ApplicationFailure.nonRetryable(
          `the BMC accepted the ${input.component} image (task ${task}) and then lost its task; the component still reports ${after ?? 'no version'}: not sent again by this attempt`,
          FAILURE.operationFailed,
          { kind: 'bmc-fault' },
        );
      }
      const after = await versionOf();
      return { component: input.component, before, after: after?.version };
    });
  }

  return {
    preflightBmc,
    getBmcPower,
    setBmcPower,
    inspectBmc,
    setBmcBootDevice,
    insertBmcMedia,
    ejectBmcMedia,
    getBmcMedia,
    applyBmcBios,
    updateBmcFirmware,
  };
}

/** A BMC error whose message names `url` with its query string cut (a signature is a secret). */
function withoutQuery(err: unknown, url: string): unknown {
  const cut = url.split(/[?#]/)[0]!;
  if (!isBmcError(err) || cut === url) return err;
  return new RedfishError(err.kind, err.message.split(url).join(`${cut}?…`), err.status);
}

export type BmcActivities = ReturnType<typeof createBmcActivities>;
