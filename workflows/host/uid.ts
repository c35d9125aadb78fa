/**
 * The host's uid: the config drive's `meta_data.uuid`. Metal3 writes the
 * BareMetalHost's `metadata.uid` there, and CAPM3 finds the Node by it (its
 * `metal3.io/uuid` label is `{{ ds.meta_data.uuid }}`), so in Kubernetes mode
 * it is the object's uid, handed over with the directives. A host of the HTTP
 * API has no object: it gets a random UUID when it is created, kept for its
 * whole life (continue-as-new, re-adoption), never the Ironic node's UUID,
 * which changes whenever the node is registered again.
 */
import { uuid4 } from '@temporalio/workflow';
import type { HostState } from '../../contracts/host';

/** Draws the API host's uid once. */
export function recordHostUid(s: HostState): void {
  if (s.uid === undefined) s.uid = uuid4();
}

/** What the config drive's meta_data.uuid is: the object's uid in Kubernetes mode, else the host's own. */
export function hostUid(s: HostState): string | undefined {
  return s.directives?.uid ?? s.uid;
}
