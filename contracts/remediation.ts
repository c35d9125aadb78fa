/**
 * The remediation workflow's contract, imported by the workflow, its
 * activities, the API and the tests: input, what it shows (query), its id.
 * Phases and counts are CAPM3's (Metal3Remediation status).
 */
import { defineQuery } from '@temporalio/workflow';
import type { HostRef } from '../model/host';
import { REINSPECT_DEFAULT_SECONDS, REMEDIATION_DEFAULTS, REPROVISION_DEFAULT_SECONDS, type NodeHandling, type RemediationRequest } from '../model/remediation';

export interface RemediationInput {
  ref: HostRef;
  /** The remediation's own id (a HostRemediation's uid, or drawn by the API): the power-off key is derived from it. */
  uid: string;
  request: RemediationRequest;
  /**
   * The host is a BareMetalHost (Kubernetes mode): the power-off request is its
   * `reboot.metal3.io/<key>` annotation, the Node is handled, and giving up
   * annotates the host. Otherwise (API mode) a remediation is the power cycle only.
   */
  kubernetes: boolean;
  /** The HostRemediation that asked for it (Kubernetes mode): its status is written as the remediation goes. */
  resource?: { name: string };
}

/** CAPM3's phases (Metal3Remediation status.phase). */
export type RemediationPhase = 'Running' | 'Waiting' | 'Deleting machine' | 'Failed';

/** The Node as first found: how it is recognised when it comes back (never by name alone). */
export interface NodeIdentity {
  name: string;
  uid: string;
  providerID?: string;
  systemUUID?: string;
}

export interface NodeBackup {
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

export interface RemediationView {
  ref: HostRef;
  uid: string;
  strategy: {
    type: 'Reboot';
    retryLimit: number;
    timeoutSeconds: number;
    /** Opt-in, beyond Metal3: after the reboots, re-provision the same image. */
    reprovision?: { timeoutSeconds: number };
    /** Opt-in, beyond Metal3: after a failed re-provision, re-inspect and name what changed. */
    reinspect?: { timeoutSeconds: number };
  };
  /** `none` in API mode: the power cycle only. */
  nodeHandling: NodeHandling | 'none';
  /** `reboot.metal3.io/<key>` (Kubernetes) or the API's power-off request key this remediation owns. */
  powerOffKey: string;
  phase: RemediationPhase;
  retryCount: number;
  /** When the last power cycle was asked for (CAPM3's lastRemediated). */
  lastRemediated?: string;
  /** `refused`: nothing was changed (e.g. an `online: false` host). */
  outcome: 'running' | 'succeeded' | 'failed' | 'refused' | 'cancelled';
  message?: string;
  node?: NodeIdentity;
  /** The Node's labels and annotations kept while it is deleted (also on the host as CAPM3's backup annotations). */
  backup?: NodeBackup;
  /** The backup was put back on the returned Node. */
  restored?: boolean;
  /** The re-provision step ran: how it ended. */
  reprovisioned?: 'succeeded' | 'failed';
  /** The re-inspection's differences against the hardware recorded before it (empty: nothing changed). */
  hardwareChanges?: string[];
  /** Gave up: the host is marked `capm3.metal3.io/unhealthy` (Kubernetes mode: the annotation). */
  hostUnhealthy?: boolean;
  /** The steps taken so far, newest last (at most 40). */
  steps: { at: string; step: string }[];
}

export const remediationQuery = defineQuery<RemediationView>('remediation');

export const remediationWorkflowId = (ref: HostRef, uid: string): string => `remediation/${ref.namespace}/${ref.name}/${uid}`;

/** CAPM3's key: `reboot.metal3.io/metal3-remediation-<uid>`. */
export const remediationPowerOffKey = (uid: string): string => `metal3-remediation-${uid}`;

/** Kubernetes annotations CAPM3 uses on the BareMetalHost. */
export const REMEDIATION_ANNOTATIONS = {
  unhealthy: 'capm3.metal3.io/unhealthy',
  labelsBackup: 'remediation.metal3.io/node-labels-backup',
  annotationsBackup: 'remediation.metal3.io/node-annotations-backup',
  outOfServiceTaint: 'node.kubernetes.io/out-of-service',
} as const;

/** What a remediation shows before its first step (also the API's answer while its workflow has not run yet). */
export function initialRemediationView(input: RemediationInput): RemediationView {
  const { reprovision, reinspect } = input.request.strategy;
  return {
    ref: input.ref,
    uid: input.uid,
    strategy: {
      type: 'Reboot',
      retryLimit: input.request.strategy.retryLimit ?? REMEDIATION_DEFAULTS.retryLimit,
      timeoutSeconds: input.request.strategy.timeoutSeconds ?? REMEDIATION_DEFAULTS.timeoutSeconds,
      ...(reprovision ? { reprovision: { timeoutSeconds: reprovision.timeoutSeconds ?? REPROVISION_DEFAULT_SECONDS } } : {}),
      ...(reinspect ? { reinspect: { timeoutSeconds: reinspect.timeoutSeconds ?? REINSPECT_DEFAULT_SECONDS } } : {}),
    },
    nodeHandling: input.kubernetes ? (input.request.nodeHandling ?? 'OutOfServiceTaint') : 'none',
    powerOffKey: remediationPowerOffKey(input.uid),
    phase: 'Running',
    retryCount: 0,
    outcome: 'running',
    steps: [],
  };
}

/** The remediation workflow's signature (workflows/remediation/remediate.ts). */
export type RemediateWorkflow = (input: RemediationInput) => Promise<RemediationView>;
