/**
 * The pivot workflow's contract, defined once and imported by the workflow,
 * its activities, the API and the tests: each host's step and outcome, what
 * an export carries (names of Secrets, never their values), the progress it
 * answers, and its pause / resume / cancel updates (the fleet's, by name).
 */
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { HostRef } from '../model/host';
import type { PivotInput } from '../model/pivot';
import type { FleetControlRequest, FleetCounts, FleetHost, FleetPhase, FleetSelection } from './fleet';

/** A host's steps in order; `rollback` only after a failure before `handover`. */
export const PIVOT_STEPS = ['precheck', 'freeze', 'export', 'import', 'handover', 'verify', 'remove', 'done'] as const;
export type PivotStep = (typeof PIVOT_STEPS)[number] | 'rollback';

/** What the target host must show once adopted: the source's, read at export. */
export interface PivotExpect {
  provisioningState: string;
  image?: string;
  poweredOn: boolean;
  consumerRef?: { kind?: string; name?: string; namespace?: string };
  /** The source's Ironic node: the target must have registered its own (another id) before the host counts as adopted. */
  sourceNodeId?: string;
}

/** A host as the fleet records it (outcome, times, error or reason), plus where its move stands. */
export interface PivotHost extends FleetHost {
  step?: PivotStep;
  /** Read at export, checked at verify. */
  expect?: PivotExpect;
  /** A failure before hand-over was undone: nothing of it is left in the target, the source runs on. */
  rolledBack?: boolean;
}

/**
 * The source host as exported: everything the target needs, Secrets by name
 * only (the import activity copies their data itself, from cluster to cluster).
 */
export interface PivotManifest {
  ref: HostRef;
  labels: Record<string, string>;
  /** The source's annotations, less the pivot's own pause and the one-shot ones. */
  annotations: Record<string, string>;
  spec: Record<string, unknown>;
  /** Metal3's `baremetalhost.metal3.io/status`: the source's `.status` as JSON. */
  statusAnnotation: string;
  hardwareData?: Record<string, unknown>;
  /** Secrets the spec references, in the host's namespace. */
  secrets: string[];
  expect: PivotExpect;
}

export type PrecheckResult = { ok: true } | { skip: string };

export interface PivotState {
  selection?: FleetSelection;
  hosts: PivotHost[];
  paused?: { reason?: string; since: string };
  cancelled?: { reason?: string; at: string };
  halted?: { at: string; reason: string };
  runs: number;
}

export interface PivotProgress {
  name: string;
  input: PivotInput;
  phase: FleetPhase;
  counts: FleetCounts;
  selected: number;
  limits: { maxConcurrent: number; maxFailures: number };
  selection?: FleetSelection;
  hosts: PivotHost[];
  failures: Array<{ ref: HostRef; error: string; rolledBack: boolean }>;
  paused?: PivotState['paused'];
  cancelled?: PivotState['cancelled'];
  halted?: PivotState['halted'];
  runs: number;
}

export interface PivotOptions {
  maxHistoryEvents: number;
  /** How long one wait on the target lasts before the workflow records it and waits again. */
  pollWindowSeconds: number;
}
export const DEFAULT_PIVOT_OPTIONS: PivotOptions = { maxHistoryEvents: 5000, pollWindowSeconds: 300 };

export const pivotProgressQuery = defineQuery<PivotProgress>('progress');
/** Start no new host until resumed; hosts in flight finish their move. */
export const pausePivotUpdate = defineUpdate<PivotProgress, [FleetControlRequest]>('pause');
export const resumePivotUpdate = defineUpdate<PivotProgress, []>('resume');
/** Start no new host; hosts in flight finish (a host half-moved is never left so). Never a failure. */
export const cancelPivotUpdate = defineUpdate<PivotProgress, [FleetControlRequest]>('cancel');

export const pivotWorkflowId = (name: string): string => `pivot/${name}`;

/** What the target plane's worker says of its own Ironic (workflows/pivot/plane-check.ts). */
export interface PlaneReport {
  ironic: { apiVersion: string; conductors: string[]; hardwareTypes: string[] };
}
export const planeCheckWorkflowId = (pivot: string): string => `plane-check/${pivot}`;

/** The plane check a pivot asks of its target (workflows/pivot/plane-check.ts). */
export type PlaneCheckWorkflow = () => Promise<PlaneReport>;
