/**
 * Every activity's timeouts and retries, by class: each `proxyActivities`
 * (and `proxyLocalActivities`) in workflows/ takes one of these, so a reader
 * finds how long a kind of call may take, and how often it is tried, in one
 * place. A class that depends on a workflow's input (a poll window, a soft
 * power-off timeout, a deadline) is a function of it.
 *
 * A heartbeat timeout is set only where the activity heartbeats: without
 * heartbeats it would end a healthy call. Activity options are not part of a
 * workflow's history shape, so changing a value here replays as before.
 */
import { ActivityCancellationType, type ActivityOptions, type LocalActivityOptions } from '@temporalio/workflow';
import { NON_RETRYABLE_FAILURES } from '../../model/failures';

/**
 * Transient faults are retried quietly for about five minutes, then the
 * operation fails and the host records it.
 */
export const QUIET_RETRY = {
  initialInterval: '1 second',
  backoffCoefficient: 2,
  maximumInterval: '30 seconds',
  maximumAttempts: 12,
  nonRetryableErrorTypes: NON_RETRYABLE_FAILURES,
} as const;

/** A BMC error is recorded at once: a few quick retries for the kinds that may pass on their own. */
export const BMC_RETRY = { ...QUIET_RETRY, maximumAttempts: 3 } as const;

/** Power changes, through Ironic or the BMC: five attempts before the host records the failure. */
const BMC_POWER_RETRY = { ...BMC_RETRY, maximumAttempts: 5 } as const;

/** About five minutes for the fleet and pivot calls, whose activities name their own final failures. */
const CONTROL_RETRY = { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 12 } as const;

/** An image server that does not answer is asked a few times (about 15 s), then it is the host's error. */
const IMAGE_RETRY = { ...QUIET_RETRY, maximumAttempts: 4 } as const;

/**
 * Ironic's provision-state waits; heartbeats let a new worker take over after
 * a crash. Each heartbeat the server records is a database write: the worker
 * sends at most one per 15 s (its maxHeartbeatThrottleInterval), about 70
 * writes a second for 1,000 waiting hosts, and a one-minute timeout leaves
 * room for a slow server while a crash is still noticed within it.
 */
const IRONIC_WAIT: ActivityOptions = { startToCloseTimeout: '3 hours', heartbeatTimeout: '1 minute', retry: QUIET_RETRY };

/** A soft power off may take its whole timeout before the hard one: room for both, heartbeats while waiting. */
const slowPower = (softTimeoutSeconds: number, retry: ActivityOptions['retry']): ActivityOptions => ({
  startToCloseTimeout: `${softTimeoutSeconds + 300} seconds`,
  heartbeatTimeout: '60 seconds',
  retry,
});

export const ACTIVITY_OPTIONS = {
  /** Node record changes in Ironic (delete, detach): one or two requests. */
  ironicCall: { startToCloseTimeout: '2 minutes', retry: QUIET_RETRY },
  /**
   * Writing the node record: several requests, each queued behind a busy
   * Ironic at fleet scale (at 1,000 hosts ~1% of first attempts ran past two
   * minutes and were redone). Every Ironic activity heartbeats every 10 s
   * (activities/ironic/node-driver.ts), so a slow Ironic gets the time and a
   * crash is still noticed within a minute.
   */
  ironicRegister: { startToCloseTimeout: '15 minutes', heartbeatTimeout: '1 minute', retry: QUIET_RETRY },
  ironicWait: IRONIC_WAIT,
  /**
   * The same waits where the host may cancel them (operation-cancel.ts): the
   * cancellation is over only once the activity has stopped. Cancelled the
   * SDK's default way, the operation would go on to settle the node while the
   * wait still ran; the host would deprovision the node to `available` within
   * a second, and the deploy wait, which had not yet heard of its cancellation
   * (that comes with a heartbeat's answer), would see an available node and
   * deploy it again.
   */
  ironicWaitCancellable: { ...IRONIC_WAIT, cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED },
  /** Settling a node after a cancelled wait: a refused abort ends on Ironic's own callback timeout. */
  ironicSettle: { startToCloseTimeout: '1 hour', heartbeatTimeout: '1 minute', retry: QUIET_RETRY },
  /** A node's firmware components read for the API: answered now or not at all (a gone node is final). */
  ironicFirmwareRead: { startToCloseTimeout: '60 seconds', retry: { maximumAttempts: 3, nonRetryableErrorTypes: ['IronicNodeGone'] } },
  /** Power changes through Ironic: its transient faults are retried quietly, as every Ironic call (a reboot half done is worse). */
  ironicPower: (softTimeoutSeconds: number): ActivityOptions => slowPower(softTimeoutSeconds, QUIET_RETRY),

  /**
   * A BMC session (pre-flight, inventory, boot override, eject, reads, a power
   * change polled until the BMC reports it): each request up to 30 s on a slow
   * BMC, heartbeating; a BMC error is recorded at once.
   */
  bmcCall: { startToCloseTimeout: '5 minutes', heartbeatTimeout: '30 seconds', retry: BMC_RETRY },
  /** InsertMedia (an ISO or a config drive): some BMCs (sushy-tools among them) download the whole image before answering. */
  bmcMediaInsert: { startToCloseTimeout: '15 minutes', retry: BMC_RETRY },
  /** A reboot into the BIOS and a read back; a firmware task on a real BMC can take tens of minutes. */
  bmcTask: { startToCloseTimeout: '1 hour', heartbeatTimeout: '1 minute', retry: BMC_RETRY },
  /** The steady-state power check's BMC read: a whole session, one attempt (the next check is the retry). */
  bmcPowerRead: { startToCloseTimeout: '3 minutes', heartbeatTimeout: '30 seconds', retry: { maximumAttempts: 1 } },
  bmcPower: (softTimeoutSeconds: number): ActivityOptions => slowPower(softTimeoutSeconds, BMC_POWER_RETRY),

  /** An image's URL and checksum checked before provisioning: a few requests, heartbeating. */
  imageCheck: { startToCloseTimeout: '3 minutes', heartbeatTimeout: '30 seconds', retry: IMAGE_RETRY },
  /** A whole image downloaded into the cache: as long as the origin takes, heartbeating every 5 s. */
  imageTransfer: { startToCloseTimeout: '2 hours', heartbeatTimeout: '30 seconds', retry: IMAGE_RETRY },
  /**
   * The same download by the cache of the host's site, on its own task queue: a
   * site whose cache worker is down is an error on the host after 10 minutes,
   * not a host waiting for ever.
   */
  imageTransferAtSite: (taskQueue: string): ActivityOptions => ({
    startToCloseTimeout: '2 hours',
    heartbeatTimeout: '30 seconds',
    retry: IMAGE_RETRY,
    taskQueue,
    scheduleToStartTimeout: '10 minutes',
  }),
  /** The direct provisioner's ISO read and hashed before the BMC gets it: an image transfer whose failure is the BMC step's. */
  imageVerify: { startToCloseTimeout: '2 hours', heartbeatTimeout: '30 seconds', retry: BMC_RETRY },

  /** The host's DHCP reservation (dnsmasq's files): quick, retried quietly. */
  dhcp: { startToCloseTimeout: '2 minutes', retry: QUIET_RETRY },
  /** The idle host's lease watch (workflows/host/dhcp.ts): ends on a change or a cancel; a lost worker is noticed within a few reads. */
  dhcpLeaseWatch: (periodSeconds: number): ActivityOptions => ({
    startToCloseTimeout: '1 day',
    heartbeatTimeout: `${Math.max(30, 3 * periodSeconds)} seconds`,
    retry: { ...QUIET_RETRY, maximumAttempts: Number.POSITIVE_INFINITY },
  }),
  /**
   * Status writes to Kubernetes in the background: retried while the API server
   * is away (the server retries; no history per attempt). The attempts are
   * capped: a write that waited for ever would hold a host's run.
   */
  kubernetesWrite: { startToCloseTimeout: '1 minute', retry: { initialInterval: '1 second', maximumInterval: '1 minute', maximumAttempts: 10 } },
  /** The provisioning limiter's own calls (the task queue's hosts and their permits). */
  limiter: { startToCloseTimeout: '2 minutes', retry: QUIET_RETRY },

  /** Reads and updates of host workflows from a fleet operation: quick, retried quietly while Temporal is busy. */
  temporalCall: { startToCloseTimeout: '2 minutes', heartbeatTimeout: '1 minute', retry: CONTROL_RETRY },
  /** Waits on a host workflow (its operation stopped, idle, detached, gone): minutes at worst, heartbeating. */
  temporalWait: { startToCloseTimeout: '1 hour', heartbeatTimeout: '1 minute', retry: CONTROL_RETRY },
  /** One poll window of a fleet host's goal (FleetOptions.pollWindowSeconds). */
  fleetWindow: (windowSeconds: number): ActivityOptions => ({
    startToCloseTimeout: `${windowSeconds + 60} seconds`,
    heartbeatTimeout: '30 seconds',
    retry: CONTROL_RETRY,
  }),
  /** Reads and writes of a pivot's two API servers: quick, retried quietly while a server is busy. */
  pivotCall: { startToCloseTimeout: '2 minutes', heartbeatTimeout: '1 minute', retry: CONTROL_RETRY },
  /** One poll window of a pivot target (PivotOptions.pollWindowSeconds). */
  pivotWindow: (windowSeconds: number): ActivityOptions => ({
    startToCloseTimeout: `${windowSeconds + 60} seconds`,
    heartbeatTimeout: '1 minute',
    retry: CONTROL_RETRY,
  }),
  /** A pivot's plane check on the target's worker: it answers within seconds or the plane is not ready. */
  planeCheck: { startToCloseTimeout: '30 seconds', retry: { maximumAttempts: 2 } },

  /** A remediation step (a request to a host workflow, the Node, the status): quick, with no attempt limit. */
  remediationCall: { startToCloseTimeout: '1 minute', retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' } },
  /** A remediation wait (the host off, the Node back): until `deadline` (ms since the epoch), heartbeating so a dead worker is noticed in 30 s. */
  remediationWait: (deadline: number): ActivityOptions => ({
    startToCloseTimeout: Math.max(deadline - Date.now(), 0) + 120_000,
    heartbeatTimeout: '30 seconds',
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
  }),
  /**
   * The power sentinel's watch of Ironic's power states (PowerSentinelInput).
   * The attempt heartbeats every 10 s whatever it waits for (a slow list of a
   * large fleet included), so a dead worker is noticed in 30 s and the retry,
   * which carries the sentinel's memory, tells a lost node within about a
   * minute; no attempt limit, the sentinel outlives any Ironic or worker outage.
   */
  powerWatch: (watchSeconds: number, intervalSeconds: number): ActivityOptions => ({
    startToCloseTimeout: `${watchSeconds + Math.max(300, 3 * intervalSeconds)} seconds`,
    heartbeatTimeout: '30 seconds',
    retry: { initialInterval: '5 seconds', backoffCoefficient: 2, maximumInterval: '1 minute' },
  }),
} satisfies Record<string, ActivityOptions | ((...args: never[]) => ActivityOptions)>;

export const LOCAL_ACTIVITY_OPTIONS = {
  /**
   * The host's permit request: one marker event in the workflow task that asks,
   * instead of three activity events and a workflow task of its own.
   */
  limiterRequest: { startToCloseTimeout: '1 minute', retry: QUIET_RETRY },
  /**
   * The steady-state power read through Ironic. A local activity holds the
   * host's workflow task open, and the task has 10 s from when the server
   * handed it out (replay and the completion's round trip included): one read
   * of at most 3 s, 4 s with the wait for a local-activity slot, so a slow
   * Ironic or BMC fails the check, never the task. At 1,000 hosts two attempts
   * of 4 s still timed tasks out behind a saturated Ironic: one attempt, the
   * next check is the retry.
   */
  powerRead: { startToCloseTimeout: '3 seconds', scheduleToCloseTimeout: '4 seconds', retry: { maximumAttempts: 1 } },
  /**
   * The node settings brought in line before a step (rules/node-settings.ts): a read, and a PATCH
   * only when the spec and the node differ. As a local activity it is one marker in the task that
   * starts the step, where an activity cost three events and a workflow task of its own before each
   * step (20 of a lifecycle's events). Bounded as the power read is, so that it never holds the
   * task open long: one attempt of at most 3 s, and a check that did not finish in it is done by
   * the activity instead (retried as every Ironic call is).
   */
  nodeSettings: { startToCloseTimeout: '3 seconds', scheduleToCloseTimeout: '4 seconds', retry: { maximumAttempts: 1 } },
} satisfies Record<string, LocalActivityOptions>;
