/** Metal3's HostUpdatePolicy CRD, converted from model/host-update-policy.ts. */
import { HostUpdatePolicySpecSchema, UPDATE_POLICY } from '../../model/host-update-policy';
import { crd, META_PROPS } from './objects';
import { toStructural } from './structural';

export function hostUpdatePolicyCrd(): Record<string, unknown> {
  return crd({
    group: UPDATE_POLICY.group,
    kind: UPDATE_POLICY.kind,
    plural: UPDATE_POLICY.plural,
    singular: UPDATE_POLICY.singular,
    shortNames: [],
    schema: {
      type: 'object',
      description: 'HostUpdatePolicy: whether the BareMetalHost of the same name takes firmware settings and updates by servicing once provisioned',
      properties: { ...META_PROPS, spec: toStructural(HostUpdatePolicySpecSchema, 'spec'), status: { type: 'object', description: 'Empty, as in Metal3' } },
    },
    status: true,
    columns: [{ name: 'Age', type: 'date', description: 'Time since creation', jsonPath: '.metadata.creationTimestamp' }],
  });
}
