/**
 * The IP pool workflow's contract (docs/dhcp-and-ipam.md): one workflow
 * per IPPool, `ippool/<namespace>/<name>`, owns the pool's allocation table;
 * every allocation and release is an Update, so they are applied one at a
 * time, recorded in the pool's history before anyone is answered, and a
 * retried request is answered from the table. Imported by the workflow, the
 * API and the Kubernetes controller.
 */
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { Allocation, IPPoolSpec, PoolRef } from '../model/ipam';

export const ipPoolWorkflowId = (ref: PoolRef): string => `ippool/${ref.namespace}/${ref.name}`;
export const IPPOOL_WORKFLOW_TYPE = 'ipPoolWorkflow';

export interface PoolState {
  ref: PoolRef;
  /** Absent until the first applyPool (update-with-start sets it at once). */
  spec?: IPPoolSpec;
  /** Claim name → its address: Metal3's `status.indexes`, with each address's prefix, gateway and DNS servers. */
  allocations: Record<string, Allocation>;
  /** When the table last changed (workflow time): Metal3's `status.lastUpdated`. */
  lastUpdated?: string;
  /** Set by deletePool: the run ends once its handlers have finished. */
  deleted?: boolean;
}

export interface PoolInput {
  ref: PoolRef;
  /** Present on continue-as-new: the table carried over. */
  state?: PoolState;
  /** History events after which the run continues as new (2,000 unless said; tests lower it). */
  maxHistoryEvents?: number;
}

export interface PoolView {
  ref: PoolRef;
  spec?: IPPoolSpec;
  /** Metal3's IPPool status: claim → address, and when it last changed. */
  status: { indexes: Record<string, string>; lastUpdated?: string };
  /** Addresses in the ranges (a decimal string: an IPv6 range may hold more than 2^53). */
  size: string;
  allocated: number;
}

export interface AllocateRequest {
  claim: string;
  /** Metal3's `ipAddress` annotation on the claim: this address or none. */
  requestedAddress?: string;
}

export type ClaimAllocation = Allocation & { claim: string; name: string };
/** One claim's answer: its allocation, or why it has none (type PoolExhausted, PreAllocationOutOfBounds, AddressUnavailable, NotFound: no spec, Conflict: being deleted). */
export type AllocateOutcome = { ok: true; allocation: ClaimAllocation } | { ok: false; claim: string; type: string; message: string };

/**
 * Each claim's allocation, in request order, the same one however often it is
 * asked. A list, so concurrent claims reaching one API process or controller
 * share an update: one workflow's updates are applied one workflow task at a
 * time, and one claim per update held 500 claims to ~5 a second.
 */
export const allocateUpdate = defineUpdate<AllocateOutcome[], [AllocateRequest[]]>('allocate');
/** Gives each claim's address back (null for one that held none): the address may be allocated again from now on. */
export const releaseUpdate = defineUpdate<(Allocation | null)[], [{ claims: string[] }]>('release');
/** Sets or replaces the pool's spec (validated; namePrefix fixed, allocations must stay inside the ranges). */
export const applyPoolUpdate = defineUpdate<PoolView, [IPPoolSpec]>('applyPool');
/** Ends the pool; refused (Conflict) while any claim holds an address. */
export const deletePoolUpdate = defineUpdate<PoolView, []>('deletePool');
export const poolViewQuery = defineQuery<PoolView>('ipPool');
/** One claim's allocation as recorded (null when it holds none): the IPAddress it stands for. */
export const claimQuery = defineQuery<ClaimAllocation | null, [string]>('ipClaim');

/** The IP pool workflow's signature (workflows/ipam/ippool.ts). */
export type IpPoolWorkflow = (input: PoolInput) => Promise<PoolView>;
