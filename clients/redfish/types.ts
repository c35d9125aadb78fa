/**
 * What the Redfish client takes and returns: where the BMC is, how to
 * authenticate, and the values of the system operations (power, reset, boot
 * override, virtual media).
 */
import type { Dispatcher } from 'undici';
import type { BmcAccess } from '../../model/bmc';

export type RedfishAuthMode = 'auto' | 'session' | 'basic';

/** Where the BMC is: a parsed BMC address (`parseBmcAddress`) fits. */
export type RedfishEndpoint = Pick<BmcAccess, 'transport' | 'host' | 'port' | 'path'>;

export interface RedfishClientOptions {
  endpoint: RedfishEndpoint;
  username: string;
  password: string;
  /** `auto` (default): a session when the service offers one, else basic. */
  auth?: RedfishAuthMode;
  /** TLS verification is on unless this is true. */
  disableCertificateVerification?: boolean;
  /** Extra CA certificate(s), PEM, trusted for this BMC. */
  ca?: string | Buffer;
  /** Every HTTP request (connect, headers and body). Default 30 s. */
  timeoutMs?: number;
  /** How long to follow a task monitor. Default 10 min. */
  taskTimeoutMs?: number;
  /** Task monitor poll interval when the BMC gives no Retry-After. Default 1 s. */
  taskPollIntervalMs?: number;
  /** Overrides the client's own undici Agent (then TLS options above are ignored). */
  dispatcher?: Dispatcher;
  /** Cancels every request and wait of this client (a cancelled activity); they throw its reason. */
  signal?: AbortSignal;
}

export type RedfishPowerState = 'On' | 'Off' | 'PoweringOn' | 'PoweringOff' | 'Paused';

export const RESET_TYPES = ['On', 'ForceOff', 'GracefulShutdown', 'ForceRestart', 'GracefulRestart', 'PowerCycle', 'ForceOn', 'Nmi', 'PushPowerButton'] as const;
export type ResetType = (typeof RESET_TYPES)[number];

export type BootTarget = 'Pxe' | 'Cd' | 'Hdd' | 'UefiHttp';
export type BootOverrideEnabled = 'Once' | 'Continuous';
export type BootOverrideMode = 'UEFI' | 'Legacy';

export interface BootOverride {
  target: BootTarget;
  /** Default `Once`. */
  enabled?: BootOverrideEnabled;
  /** Left as the BMC has it when omitted. */
  mode?: BootOverrideMode;
  /** For `UefiHttp`: the URI to boot (Boot.HttpBootUri). */
  httpBootUri?: string;
}

export interface VirtualMediaState {
  /** The slot's resource path. */
  path: string;
  id?: string;
  mediaTypes: string[];
  image?: string;
  inserted: boolean;
  /** How the slot is changed: its Insert/Eject actions, or PATCH. */
  via: 'actions' | 'patch';
}

export interface PowerWaitOptions {
  timeoutMs?: number;
  pollIntervalMs?: number;
  /** Called after each poll (e.g. to heartbeat a Temporal activity). */
  onPoll?: (state: string | undefined) => void;
}
