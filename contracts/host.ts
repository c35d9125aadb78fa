/**
 * The host workflow's contract, defined once and imported by the workflow, the
 * API and the tests: its input, the updates it accepts and the query it answers.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { HardwareDetails, HostRef, HostSpec, HostStatus, Image, OperationalStatus, ProvisioningState } from '../model/host';
import type { CleanRequest, FirmwareUpdate } from '../model/clean';
import type { HostUpdatePolicySpec } from '../model/host-update-policy';
import type { PowerRequestChange, PowerRequests, PowerRequestsView } from './power-requests';
import type { HostEvent } from '../model/host-event';

export type OperationKind = 'enroll' | 'inspect' | 'prepare' | 'provision' | 'deprovision' | 'power' | 'reboot' | 'delete' | 'detach' | 'clean' | 'service' | 'move';

/**
 * A registered host moving from one site to another (workflows/host/site-move.ts, docs/sites.md): set when
 * spec.site changes on a registered host, gone once the move (or its undoing) is done.
 */
export interface SiteMove {
  /** The site the host's node is at until the switch, and the site spec.site named before the change. */
  from: string;
  to: string;
  /** The host's Ironic node at `from` (held in maintenance from the move's first step, removed after the switch). */
  fromNode: string;
  since: string;
  /** The host's node at `to` is adopted and is the host's node now: from here the move only goes forward. */
  switched?: true;
  /** Withdrawn (spec.site back to `from`, or the host deleted) before the switch: being undone. */
  back?: true;
  /** Undone while spec.site still names `to` (the host is being deleted): the host stays at `from`. */
  undone?: true;
}

/** Which version of the credentials Secret the controller saw: references only, never the data. */
export interface CredentialsVersion {
  name: string;
  namespace: string;
  /** The Secret's metadata.resourceVersion. */
  version: string;
}

/**
 * What the Kubernetes shim derives from a BareMetalHost besides its spec
 * (annotations, the credentials Secret's version), handed over as a whole:
 * the last one received is what holds.
 */
export interface HostDirectives {
  /** `baremetalhost.metal3.io/detached`: leave Ironic without deprovisioning. */
  detached?: { deleteAction: 'delay' | 'delete'; force: boolean };
  /** `inspect.metal3.io: disabled`. */
  inspectionDisabled?: boolean;
  /** `inspect.metal3.io/hardwaredetails` (only with inspection disabled): becomes status.hardware. */
  hardwareDetails?: HardwareDetails;
  credentials?: CredentialsVersion;
  /**
   * The BareMetalHost's `metadata.uid`: the config drive's `meta_data.uuid`, as
   * Metal3 writes it (CAPM3 finds the Node by its `metal3.io/uuid` label).
   */
  uid?: string;
}

export interface OperationRecord {
  seq: number;
  kind: OperationKind;
  /** Ran inside the host workflow: its activities carry `<seq>-<kind>` as their summary. */
  inline?: true;
  /** Provisioning state the host showed while the operation ran. */
  state: string;
  startedAt: string;
  endedAt?: string;
  /** `cancelled`: stopped by the host (a delete, a pause, a new desired state); never an error. */
  outcome: 'running' | 'succeeded' | 'failed' | 'cancelled';
  error?: string;
  /** Why the host is cancelling (shown while the operation winds down) or cancelled it. */
  cancelReason?: string;
  /** What a successful step wants known, e.g. that it skipped something (direct inspection of an IPMI host). */
  note?: string;
  /** A clean: its named steps, in order, and the one running (or, once failed, the one that failed). */
  steps?: string[];
  step?: string;
  /** When the host began waiting for a provisioning permit to run this (absent: no wait). */
  delayedSince?: string;
}

export interface HostWorkflowOptions {
  /** Seconds a host's site may leave a hardware call unstarted before the host shows it unreachable (workflows/host/site-route.ts); 60 unless set. */
  siteWatchSeconds?: number;
  /** First delay before retrying a failed operation; doubles per consecutive failure. */
  errorBackoffSeconds: number;
  /** Upper bound of that delay. */
  maxErrorBackoffSeconds: number;
  /** Continue-as-new after this many history events (Temporal suggests it earlier on its own). */
  maxHistoryEvents: number;
  /**
   * Continue-as-new once the run has written this many bytes of history beside its input
   * (DEFAULT_MAX_HISTORY_BYTES when unset): a host whose status carries a large
   * inventory keeps each run's history small, whatever its event count.
   */
  maxHistoryBytes?: number;
  /** Write status and Events back to the host's BareMetalHost object (set by the Kubernetes shim). */
  publishStatus: boolean;
  /**
   * While idle in a steady state (available, provisioned, externally provisioned), read the
   * real power state this often and correct a mismatch with spec.online; 0 turns it off.
   */
  powerCheckSeconds: number;
  /** How long a soft power off / soft reboot may take before a hard one is used (Metal3: 180 s). */
  softPowerOffSeconds: number;
  /**
   * Probe the image URL and resolve a checksum-file URL before each provisioning
   * (workflows/host/rules/image-check.ts, docs/images.md); off when unset.
   */
  probeImages?: boolean;
  /**
   * Deploy each image through the workers' image cache (downloaded once, verified whole,
   * docs/images.md); off when unset.
   */
  cacheImages?: boolean;
  /**
   * Sites with an image cache worker of their own (METALFLOW_IMAGE_CACHE_SITES): a host whose
   * spec.dhcp.site is one of them caches its image there (docs/images.md, *The cache per site*).
   */
  imageCacheSites?: string[];
  /**
   * BMO's `--max-provisioning-retries`: deploys of one image that may fail before the host stops
   * trying; unset: 5, as BMO; 0: no limit.
   */
  maxProvisioningRetries?: number;
  /** How often an idle host with a DHCP reservation reads its lease into status.dhcp (host-dhcp.ts); 60 when unset, 0: never. */
  dhcpLeaseCheckSeconds?: number;
  /**
   * The power check's period for a host whose power its Ironic node reports, when the workers'
   * power sentinel watches Ironic (power-sentinel.ts) and signals a change within its interval:
   * the periodic check is then only a backstop. Unset: powerCheckSeconds. The direct
   * provisioner's BMC reads keep powerCheckSeconds.
   */
  watchedPowerCheckSeconds?: number;
}

/** 768 KiB: a run's history stays within about twice its input and this (Temporal warns at 10 MiB and stops a run at 50 MiB). Above what 4,000 events without payloads are estimated at (history-count.ts), so an ordinary host still hands over by its count. */
export const DEFAULT_MAX_HISTORY_BYTES = 768 * 1024;

export const DEFAULT_HOST_OPTIONS: HostWorkflowOptions = {
  errorBackoffSeconds: 10,
  maxErrorBackoffSeconds: 600,
  maxHistoryEvents: 4000,
  publishStatus: false,
  powerCheckSeconds: 300,
  softPowerOffSeconds: 180,
};

/** A pending permit request handed to the next run (host-permit.ts). */
export interface PermitCarry {
  requestId: string;
  /** The state the host waits to enter. */
  state: ProvisioningState;
  /** Since when the host shows `delayed`; absent: the limiter has not said the limit holds it. */
  delayedSince?: string;
  /** The limiter said the limit holds the request (absent in a carry from before it said so: held). */
  held?: boolean;
  /** The grant arrived while the run was handing over. */
  granted: boolean;
  /** The operational status before the host began to wait (the carried status says `delayed` when held). */
  statusBefore: OperationalStatus;
}

/** Everything the host workflow carries, and hands to its next run on continue-as-new. */
export interface HostState {
  ref: HostRef;
  /**
   * The host's own id outside Kubernetes mode, drawn when the host is created
   * (host-uid.ts); Kubernetes mode uses the object's uid (directives.uid).
   */
  uid?: string;
  spec?: HostSpec;
  /** Bumped for every accepted spec, so waits can notice a change. */
  generation: number;
  /** Fingerprint of the BMC settings last registered with Ironic. */
  registered?: string;
  /** spec.disablePowerOff at the last registration (the node's own disable_power_off; disable-power-off.ts). */
  registeredDisablePowerOff?: boolean;
  status: HostStatus;
  deleteRequested: boolean;
  opSeq: number;
  operations: OperationRecord[];
  retryAt?: string;
  options: HostWorkflowOptions;
  /** The shim's directives (absent outside Kubernetes mode). */
  directives?: HostDirectives;
  /**
   * A provisioning permit asked for and not yet used when the run continued as new while
   * waiting for it: the next run keeps the place in the queue.
   */
  permit?: PermitCarry;
  /** Removed from Ironic by a detach; nothing is done until the annotation goes. */
  detached?: boolean;
  /** Ironic may not know this host (detached, or status restored): register, and adopt a provisioned host, first. */
  needsAttach?: boolean;
  /** Ironic lost the host's node (node-lost.ts): register again in place before anything else. */
  nodeLost?: { nodeId: string; at: string };
  /** `inspect.metal3.io` asked to re-inspect; done once the host is available. */
  inspectionRequested?: boolean;
  /** Reboot and keyed power-off requests (absent in runs started before they existed). */
  power?: PowerRequests;
  /** The power sentinel saw the node's power change (powerChangedSignal): check it at the next idle pass. */
  powerCheckAsked?: boolean;
  /** Nothing touches the hardware (no operation, retry or power check) until unpaused. */
  paused?: PauseState;
  /** The API host's `metadata.labels` (fleet operations select by them); absent until some are set. */
  labels?: Record<string, string>;
  /** A manual clean asked for (`POST …/clean`): run from `preparing` until it succeeds or is withdrawn. */
  cleanRequest?: PendingClean;
  /** The host's HostUpdatePolicy (host-update-policy.ts): absent, no servicing, as in Metal3. */
  updatePolicy?: HostUpdatePolicySpec;
  /** HostFirmwareSettings / HostFirmwareComponents changes held for a provisioned host's servicing (firmware-held.ts). */
  firmwareHeld?: PendingClean;
  /** What the last servicing of held changes applied (HostFirmwareComponents' status.updates follows it). */
  firmwareServiced?: FirmwareServiced;
  /** The settingsHeld reason last told in an Event, so each reason is told once. */
  heldTold?: string;
  /** A pivot moved the host to another plane; recorded before the source lets it go, so the run's last record says where. */
  movedTo?: MovedTo;
  /** A move between sites under way (absent in runs that never moved: the host is at spec.site). */
  siteMove?: SiteMove;
  /** spec.dhcp's reservation as written, and the pool address it holds (host-dhcp.ts). */
  dhcp?: DhcpState;
  /**
   * Kubernetes mode: a status write not finished when the run handed over
   * (host-status-publish.ts). The next run writes its status first, with these Events.
   */
  statusOutbox?: StatusOutbox;
}

/** The status outbox handed to the next run: the status itself is the state's; the Events still to go with it (at most 50). */
export interface StatusOutbox {
  events: HostEvent[];
}

export interface DhcpState {
  /** Site and reservation last written (their JSON): written again only when this changes. */
  written?: { site: string; fingerprint: string };
  /** The address claimed from spec.dhcp.ipPool (the claim is named after the host). */
  allocation?: { pool: string; claim: string; address: string; prefix?: number; gateway?: string; dnsServers?: string[] };
  /** When the lease was last read (workflow time). */
  leaseCheckedAt?: string;
  /** The last sync failed: its error is in status and is cleared by the next sync that succeeds. */
  failed?: true;
}

/** Where a pivot moved the host: the target plane as the operator registered it (its id, paths and names, never credentials). */
export interface MovedTo {
  pivot: string;
  at: string;
  target: { plane?: string; taskQueue?: string; temporalNamespace?: string; kubeconfig?: string; kubeconfigSecret?: { namespace: string; name: string }; api?: { url: string } };
}

/** Held firmware changes a service applied: the images flashed and the BIOS settings set. */
export interface FirmwareServiced {
  updates?: FirmwareUpdate[];
  settings?: Record<string, string>;
  at: string;
}

export interface PendingClean {
  request: CleanRequest;
  /** Tells a request that replaced another (while the first waited to retry) from the one that ran. */
  id: number;
  at: string;
  /** A firmware change held while the host was provisioned, taken as its clean once deprovisioned. */
  held?: true;
}

/** Who paused the host: Metal3's `baremetalhost.metal3.io/paused` value, or the API caller's reason. */
export interface PauseState {
  reason: string;
  since: string;
}

export interface HostWorkflowInput {
  ref: HostRef;
  /** A re-adopted host keeps the uid its ended run had. */
  uid?: string;
  /** Present on continue-as-new: the previous run's state. */
  state?: HostState;
  options?: Partial<HostWorkflowOptions>;
}

export interface HostView {
  ref: HostRef;
  /** The config drive's `meta_data.uuid` (host-uid.ts); absent on a host created before it existed, until it provisions. */
  uid?: string;
  spec?: HostSpec;
  status: HostStatus;
  generation: number;
  deleteRequested: boolean;
  currentOperation?: OperationRecord;
  /** Waiting for a provisioning permit (`status.operationalStatus: delayed`): the state it will enter, and since when. */
  delayed?: { state: ProvisioningState; since: string };
  operations: OperationRecord[];
  retryAt?: string;
  /** Pending reboot, keyed power-off requests, last power mismatch seen by the periodic check. */
  power: PowerRequestsView;
  paused?: PauseState;
  labels?: Record<string, string>;
  /** A manual clean waiting to run, or running (`currentOperation.step` names its step). */
  cleanRequest?: PendingClean;
  /** Why a changed spec.raid / spec.firmware is not applied now (a provisioning or provisioned host). */
  settingsHeld?: string;
  /** The host's HostUpdatePolicy, when it has one (servicing of a provisioned host). */
  updatePolicy?: HostUpdatePolicySpec;
  /** Firmware settings / updates held for servicing at the provisioned host's next reboot (`settingsHeld` says why). */
  firmwareHeld?: PendingClean;
  /** What the last servicing of held changes applied. */
  firmwareServiced?: FirmwareServiced;
  /** Kubernetes mode: the BareMetalHost is the source of truth, so changes belong there (fleet operations leave the host alone). */
  managedBy?: 'kubernetes';
  /** A pivot moved the host away: where to find it now. */
  movedTo?: MovedTo;
  /** A move to another site under way (spec.site changed on a registered host; docs/sites.md). */
  siteMove?: SiteMove;
  /** The host's site (spec.site) has left its hardware calls unstarted: its worker is stopped or cut off (docs/sites.md). */
  siteUnreachable?: { site: string; since: string; reason: string };
}

/**
 * A small summary: an update's result is kept in history, and the whole view (status with the
 * hardware inventory, 50 operation records) made every spec change cost that much. The view is a
 * query away (no history).
 */
export interface ApplySpecResult {
  generation: number;
  changed: boolean;
  /** Reboot and power-off requests after the change (the shim's power annotations follow them). */
  power: PowerRequestsView;
}

/** What an API host has besides its spec. `labels` replaces the host's labels; absent leaves them as they are. */
export interface HostMetadata {
  labels?: Record<string, string>;
}

/** Desired spec (and metadata); rejected (nothing applied) when invalid or when it conflicts with a running operation. */
export const applySpecUpdate = defineUpdate<ApplySpecResult, [HostSpec, HostMetadata?]>('applySpec');
/** Set (provision) or clear (deprovision) the image without resending the spec; validated like applySpec. */
export const setImageUpdate = defineUpdate<ApplySpecResult, [Image | null]>('setImage');
/** Ask the host to deprovision, power off and leave Ironic; the workflow ends when it is gone. */
export const deleteHostUpdate = defineUpdate<{ accepted: boolean }, []>('deleteHost');
export const hostViewQuery = defineQuery<HostView>('host');

/** What the power sentinel saw of the host's Ironic node; the host reads its power itself before it records anything. */
export interface PowerChanged {
  /** When the sentinel's list saw it (its clock). */
  at: string;
  /** Ironic's power_state before and now; absent `to`: the node is gone. */
  from: string | null;
  to?: string | null;
  /** The node's provision state moved between two of the sentinel's steady sights. */
  provision?: { from: string | null; to: string | null };
}
/** Sent by the power sentinel (workflows/power/power-sentinel.ts) when the host's node changed power or vanished while steady. */
export const powerChangedSignal = defineSignal<[PowerChanged]>('powerChanged');

/**
 * Sent by the controller when a BareMetalHost's status has differed from its workflow's search attributes for two
 * of its scans (k8s/controller/status-scan.ts): a status write lost with its worker. The host writes its status as it stands.
 */
export const publishStatusSignal = defineSignal('publishStatus');

export interface DirectivesResult {
  changed: boolean;
  /** Why a requested detach waits (the host is not in a state that allows it yet). */
  detachPending?: string;
  /** The spec sent with the directives, taken after them (as by applySpec); absent when none was sent, or from a worker that predates it. */
  spec?: ApplySpecResult;
}
/**
 * The shim's directives (annotations, credentials version); idempotent, the last one holds. A spec sent with them
 * is applied after them, as applySpec would (validated alike: an invalid one refuses the whole update): one update
 * where a new BareMetalHost took two. A worker that predates it takes the directives alone and answers no `spec`.
 */
export const applyDirectivesUpdate = defineUpdate<DirectivesResult, [HostDirectives, HostSpec?]>('applyDirectives');
/**
 * `baremetalhost.metal3.io/status`: take this status instead of registering and
 * inspecting from scratch. Applied only to a host that has no status yet;
 * `restored: false` otherwise (the annotation has nothing left to do either way).
 */
export const restoreStatusUpdate = defineUpdate<{ restored: boolean; reason?: string }, [HostStatus]>('restoreStatus');
/** `inspect.metal3.io` with an empty value: inspect again once the host is available. */
export const requestInspectionUpdate = defineUpdate<{ accepted: boolean; pending: boolean }, []>('requestInspection');
/**
 * Reboot and power-off requests (Metal3's reboot.metal3.io annotations, and the API): a one-shot
 * reboot, the state of the one-shot annotation, and keyed power-off requests that keep the host
 * off until all are released. Rejected (InvalidRequest) for a bad mode or key, or keyed requests
 * on a host with spec.disablePowerOff.
 */
export const powerRequestsUpdate = defineUpdate<PowerRequestsView, [PowerRequestChange]>('powerRequests');

export interface PauseRequest {
  paused: boolean;
  /** Shown in the host's view and Event (the annotation's value, or the API caller's words); at most 256 characters. */
  reason?: string;
}
export interface PauseResult {
  paused?: PauseState;
  changed: boolean;
  /** No operation runs (a running one was cancelled and has ended): nothing touches the hardware now. */
  idle: boolean;
}
/**
 * `baremetalhost.metal3.io/paused` and `PUT/DELETE …/paused`: pausing cancels a
 * running operation that can be interrupted (inspect, prepare, provision, power,
 * reboot) and stops everything else, deletion included, until unpaused.
 */
export const setPausedUpdate = defineUpdate<PauseResult, [PauseRequest]>('setPaused');
/** A pivot's record on the source host (detached, handed over): where the host went. A record only: nothing is done for it. */
export const recordMoveUpdate = defineUpdate<{ recorded: true }, [MovedTo]>('recordMove');
export const MAX_PAUSE_REASON = 256;

export interface CleanRequestResult {
  /** The request now pending (absent once withdrawn). */
  pending?: PendingClean;
  changed: boolean;
}
/**
 * `POST …/clean` (a request) and `DELETE …/clean` (null: withdraw it; a running clean is
 * cancelled, not failed). Rejected: InvalidRequest for a bad step, Conflict when the host is
 * not available (cleaning erases disks; a provisioned host is refused) or a clean is running.
 */
export const requestCleanUpdate = defineUpdate<CleanRequestResult, [CleanRequest | null]>('requestClean');

/**
 * The host's HostUpdatePolicy (Kubernetes: the resource of the host's name; API: `PUT …/update-policy`),
 * null when it is deleted. Rejected: InvalidRequest naming the field.
 */
export const setUpdatePolicyUpdate = defineUpdate<{ changed: boolean; policy?: HostUpdatePolicySpec }, [HostUpdatePolicySpec | null]>('setUpdatePolicy');

export interface HoldFirmwareResult {
  /** The change now held (absent once withdrawn). */
  held?: PendingClean;
  /** Why it waits (the host view's settingsHeld). */
  reason?: string;
  changed: boolean;
}
/**
 * A HostFirmwareSettings change (a `bios` step with settings) and/or HostFirmwareComponents updates
 * (a `firmware` step) for a provisioned host, held until its next reboot and applied there by servicing
 * when its HostUpdatePolicy allows; null withdraws them. The whole held change
 * is replaced each time. Rejected: InvalidRequest for another step or a bad one, Conflict when the host
 * is not provisioned (never while provisioning; an available host takes them as a clean).
 */
export const holdFirmwareChangeUpdate = defineUpdate<HoldFirmwareResult, [CleanRequest | null]>('holdFirmwareChange');

/** The host workflow's signature (workflows/host/host.ts), for typed starts and handles. */
export type HostWorkflow = (input: HostWorkflowInput) => Promise<HostView>;

/** Metal3's retryCount: after more failures than this, a delete stops trying to clean up the host. */
export const DELETE_RETRY_LIMIT = 3;

export interface FailCountResetResult {
  /** The count was lowered (false: it already was at or below the one asked). */
  reset: boolean;
  provisioningFailCount: number;
}
/**
 * BMO's way out of the provisioning retry limit: `status.provisioningFailCount` set lower (Kubernetes:
 * an edit of the object's status the controller hands over; API: `DELETE …/provisioning-fail-count`).
 * A host held at the limit provisions again. Rejected: InvalidRequest for a count that is not a whole
 * number of at least 0.
 */
export const resetProvisioningFailCountUpdate = defineUpdate<FailCountResetResult, [{ provisioningFailCount: number }]>('resetProvisioningFailCount');
