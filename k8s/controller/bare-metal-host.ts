/** A BareMetalHost as the controller's informer holds it: the spec unparsed (validated per reconcile), the status as last written. */
import type { HostStatus } from '../../model/host';
import type { KubeObject } from './informer';

export interface BareMetalHost extends KubeObject {
  spec?: unknown;
  status?: Partial<HostStatus>;
}
