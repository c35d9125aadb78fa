/**
 * A remediation's Node handling (Kubernetes mode), each step idempotent under
 * retry: find the host's Node and remember how to recognise it (providerID,
 * system UUID: never the name alone), the out-of-service taint, CAPM3's backup
 * of labels and annotations on the BareMetalHost and the Node's deletion,
 * waiting for the same machine's Node to come back Ready, and the restore.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { HostRef } from '../../model/host';
import { REMEDIATION_FAILURE } from '../../model/remediation';
import { isKubeError } from '../../clients/kubernetes/kube-error';
import type { KubeRest } from '../../clients/kubernetes/kube-rest';
import { patchHostRemediationStatus } from '../../clients/kubernetes/host-remediations';
import type { HostRemediationStatus } from '../../model/host-remediation';
import { annotateHost, deleteNode, getNode, listNodes, patchNode, type KubeNode, type Taint } from '../../clients/kubernetes/nodes';
import { REMEDIATION_ANNOTATIONS, type NodeBackup, type NodeIdentity } from '../../contracts/remediation';
import { heartbeat, pause } from '../common/activity-context';

const POLL_MS = 1000;
/** What Kubernetes' node shutdown handling reads (KEP-2268): workloads leave, volumes detach. */
const OUT_OF_SERVICE: Taint = { key: REMEDIATION_ANNOTATIONS.outOfServiceTaint, value: 'nodeshutdown', effect: 'NoExecute' };

const identityOf = (n: KubeNode): NodeIdentity => ({
  name: n.metadata.name,
  uid: n.metadata.uid,
  ...(n.spec?.providerID ? { providerID: n.spec.providerID } : {}),
  ...(n.status?.nodeInfo?.systemUUID ? { systemUUID: n.status.nodeInfo.systemUUID } : {}),
});

/** The same machine: its providerID, else its system UUID. */
export function sameMachine(id: NodeIdentity, n: KubeNode): boolean {
  if (id.providerID) return n.spec?.providerID === id.providerID;
  return id.systemUUID !== undefined && n.status?.nodeInfo?.systemUUID === id.systemUUID;
}

/**
 * Ready, with a heartbeat from a later second than `since` (a kubelet that has run since
 * the power came back). Kubernetes times have whole seconds: a heartbeat in the same
 * second may be from before.
 */
function readySince(n: KubeNode, sinceMs: number): boolean {
  const ready = n.status?.conditions?.find((c) => c.type === 'Ready');
  if (ready?.status !== 'True') return false;
  const beat = Date.parse(ready.lastHeartbeatTime ?? ready.lastTransitionTime ?? '');
  return Number.isFinite(beat) && Math.floor(beat / 1000) > Math.floor(sinceMs / 1000);
}

/** Retries a patch that lost a race (409) after reading again. */
async function withConflictRetry<T>(fn: () => Promise<T>): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      return await fn();
    } catch (err) {
      if (!isKubeError(err, 'conflict') || i >= 5) throw err;
    }
  }
}

export function createRemediationNodeActivities(deps: { rest?: KubeRest } = {}) {
  const rest = (): KubeRest => {
    if (!deps.rest) throw ApplicationFailure.nonRetryable('this worker has no Kubernetes API server (METALFLOW_KUBECONFIG)', REMEDIATION_FAILURE.noKubernetes);
    return deps.rest;
  };
  /** The Node of this identity now: by name first, else any Node of the same machine. */
  const current = async (id: NodeIdentity): Promise<KubeNode | undefined> => {
    const byName = await getNode(rest(), id.name);
    if (byName && sameMachine(id, byName)) return byName;
    return (await listNodes(rest())).find((n) => sameMachine(id, n));
  };

  return {
    /** Writes a HostRemediation's status (the object deleted meanwhile is not an error). */
    async publishRemediationStatus(call: { namespace: string; name: string; status: HostRemediationStatus }): Promise<void> {
      await patchHostRemediationStatus(rest(), call.namespace, call.name, call.status);
    },

    /**
     * The host's Node: `nodeName`, else the Node labelled `metal3.io/uuid=<hostUid>`
     * (CAPM3's label). Undefined when there is none, or it cannot be told apart from
     * another machine's (no providerID, no system UUID).
     */
    async findHostNode(call: { nodeName?: string; hostUid?: string }): Promise<{ node?: NodeIdentity; reason?: string }> {
      let node: KubeNode | undefined;
      if (call.nodeName) node = await getNode(rest(), call.nodeName);
      else if (call.hostUid) [node] = await listNodes(rest(), `metal3.io/uuid=${call.hostUid}`);
      if (!node) return { reason: call.nodeName ? `no Node ${call.nodeName}` : `no Node labelled metal3.io/uuid=${call.hostUid ?? '(the host has no uid)'}` };
      const id = identityOf(node);
      if (!id.providerID && !id.systemUUID) return { reason: `Node ${id.name} has neither spec.providerID nor status.nodeInfo.systemUUID: its return could not be told from another machine's` };
      return { node: id };
    },

    /** Adds the out-of-service taint (once). False when the Node is gone. */
    async taintNodeOutOfService(id: NodeIdentity): Promise<boolean> {
      return withConflictRetry(async () => {
        const n = await current(id);
        if (!n) return false;
        const taints = n.spec?.taints ?? [];
        if (taints.some((t) => t.key === OUT_OF_SERVICE.key)) return true;
        await patchNode(rest(), n.metadata.name, {
          metadata: { resourceVersion: n.metadata.resourceVersion },
          spec: { taints: [...taints, { ...OUT_OF_SERVICE, timeAdded: new Date().toISOString() }] },
        });
        return true;
      });
    },

    async removeOutOfServiceTaint(id: NodeIdentity): Promise<void> {
      await withConflictRetry(async () => {
        const n = await current(id);
        const taints = n?.spec?.taints ?? [];
        if (!n || !taints.some((t) => t.key === OUT_OF_SERVICE.key)) return;
        await patchNode(rest(), n.metadata.name, {
          metadata: { resourceVersion: n.metadata.resourceVersion },
          spec: { taints: taints.filter((t) => t.key !== OUT_OF_SERVICE.key) },
        });
      });
    },

    /**
     * Reads the Node's labels and annotations and writes them on the host as CAPM3's
     * backup annotations; returns them for the workflow's state. Undefined when the Node is gone.
     */
    async backUpNode(call: { ref: HostRef; node: NodeIdentity }): Promise<NodeBackup | undefined> {
      const n = await current(call.node);
      if (!n) return undefined;
      const backup: NodeBackup = { labels: n.metadata.labels ?? {}, annotations: n.metadata.annotations ?? {} };
      const present = await annotateHost(rest(), call.ref, {
        [REMEDIATION_ANNOTATIONS.labelsBackup]: JSON.stringify(backup.labels),
        [REMEDIATION_ANNOTATIONS.annotationsBackup]: JSON.stringify(backup.annotations),
      });
      if (!present) throw ApplicationFailure.nonRetryable(`BareMetalHost ${call.ref.namespace}/${call.ref.name} is gone`, REMEDIATION_FAILURE.hostGone);
      return backup;
    },

    /** Deletes the machine's Node, whichever object it is now; done when none is left. */
    async deleteHostNode(id: NodeIdentity): Promise<void> {
      for (let i = 0; i < 5; i++) {
        const n = await current(id);
        if (!n) return;
        await deleteNode(rest(), n.metadata.name, n.metadata.uid);
      }
    },

    /**
     * Waits for the machine's Node to be Ready with a heartbeat since `since`
     * (created again, or the same object when it was only tainted), until `deadline`.
     */
    async awaitNodeBack(call: { node: NodeIdentity; since: string; deadline: string }): Promise<{ node?: NodeIdentity }> {
      const since = Date.parse(call.since);
      const end = Date.parse(call.deadline);
      for (;;) {
        const n = await current(call.node);
        if (n && readySince(n, since)) return { node: identityOf(n) };
        if (Date.now() >= end) return {};
        heartbeat({ present: n !== undefined });
        await pause(POLL_MS);
      }
    },

    /**
     * Puts the backed-up labels and annotations on the returned Node (what the kubelet
     * set since is kept unless the backup names the same key) and removes the backup
     * annotations from the host. Idempotent: the same merge patch, then the same removal.
     */
    async restoreNode(call: { ref: HostRef; node: NodeIdentity; backup: NodeBackup }): Promise<void> {
      const n = await current(call.node);
      if (!n) throw ApplicationFailure.retryable(`Node ${call.node.name} is gone again`, 'NodeGone');
      await patchNode(rest(), n.metadata.name, { metadata: { labels: call.backup.labels, annotations: call.backup.annotations } });
      await annotateHost(rest(), call.ref, { [REMEDIATION_ANNOTATIONS.labelsBackup]: null, [REMEDIATION_ANNOTATIONS.annotationsBackup]: null });
    },
  };
}
