/**
 * Names and identifiers derived from a host's namespace and name. Every layer
 * derives them here so the workflow ID, the Ironic node name and the secret
 * names can never drift apart.
 */
import { fail, ok, type FieldError, type Result } from './field-error';
import type { HostRef } from './host';

// Kubernetes object names (DNS-1123 subdomain) and namespaces (DNS-1123 label).
const SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** Ironic's node name column (and API limit); metalflow names nodes `namespace~name`. */
export const IRONIC_NODE_NAME_MAX = 255;

/** A host whose Ironic node name would be too long for Ironic; checked with the spec, so every path refuses it. */
export function nodeNameErrors(ref: HostRef): FieldError[] {
  const length = ironicNodeName(ref).length;
  if (length <= IRONIC_NODE_NAME_MAX) return [];
  return [
    {
      field: 'metadata.name',
      reason:
        `is ${ref.name.length} characters; its Ironic node name "<namespace>~<name>" would be ${length}, and Ironic allows ${IRONIC_NODE_NAME_MAX}: ` +
        `in namespace "${ref.namespace}" a host name may have at most ${IRONIC_NODE_NAME_MAX - ref.namespace.length - 1} characters`,
    },
  ];
}

export function validateHostRef(ref: HostRef): Result<HostRef> {
  if (!LABEL.test(ref.namespace) || ref.namespace.length > 63) {
    return fail(
      'metadata.namespace',
      `"${ref.namespace}" is not a valid namespace: use at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit`,
    );
  }
  if (!SUBDOMAIN.test(ref.name) || ref.name.length > 253) {
    return fail(
      'metadata.name',
      `"${ref.name}" is not a valid host name: use at most 253 lower-case letters, digits, '-' and '.', starting and ending with a letter or digit`,
    );
  }
  const tooLong = nodeNameErrors(ref);
  if (tooLong.length > 0) return { ok: false, errors: tooLong };
  return ok(ref);
}

/** One long-lived workflow per host: its ID is the host's identity in Temporal. */
export const hostWorkflowId = (ref: HostRef): string => `host/${ref.namespace}/${ref.name}`;

export function parseHostWorkflowId(workflowId: string): HostRef | undefined {
  const m = /^host\/([^/]+)\/([^/]+)$/.exec(workflowId);
  return m ? { namespace: m[1]!, name: m[2]! } : undefined;
}

/** Metal3's convention for the Ironic node name, so BMO-managed nodes are recognised. */
export const ironicNodeName = (ref: HostRef): string => `${ref.namespace}~${ref.name}`;

/** Default secret names when the API stores credentials and data for a host. */
export const defaultSecretNames = (ref: HostRef) => ({
  credentials: `${ref.name}-bmc-secret`,
  userData: `${ref.name}-user-data`,
  networkData: `${ref.name}-network-data`,
  metaData: `${ref.name}-meta-data`,
});
