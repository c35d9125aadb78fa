/** The HostRemediation CRD (metalflow.io), converted from model/host-remediation.ts. */
import { HOST_REMEDIATION, HostRemediationSpecSchema, HostRemediationStatusSchema } from '../../model/host-remediation';
import { crd, META_PROPS } from './objects';
import { toStructural, type JSONSchemaProps } from './structural';

export function hostRemediationSchema(): JSONSchemaProps {
  const spec = toStructural(HostRemediationSpecSchema, 'spec');
  const strategy = spec.properties!.strategy!;
  // The pairing the schema cannot say (model/remediation.ts strategyPairingError): the API server refuses it too.
  strategy['x-kubernetes-validations'] = [
    { rule: '!has(self.reinspect) || has(self.reprovision)', message: 'reinspect needs reprovision: re-inspection runs only after a failed re-provision', fieldPath: '.reinspect' },
  ];
  return {
    type: 'object',
    description: 'HostRemediation asks metalflow to remediate a BareMetalHost with CAPM3\'s reboot strategy',
    properties: { ...META_PROPS, spec, status: toStructural(HostRemediationStatusSchema, 'status') },
  };
}

export function hostRemediationCrd(): Record<string, unknown> {
  return crd({
    group: HOST_REMEDIATION.group,
    kind: HOST_REMEDIATION.kind,
    plural: HOST_REMEDIATION.plural,
    singular: 'hostremediation',
    shortNames: ['hrem'],
    schema: hostRemediationSchema(),
    status: true,
    columns: [
      { name: 'Host', type: 'string', description: 'The BareMetalHost', jsonPath: '.spec.hostName' },
      { name: 'Phase', type: 'string', description: 'CAPM3 phase', jsonPath: '.status.phase' },
      { name: 'Retries', type: 'integer', description: 'Power cycles so far', jsonPath: '.status.retryCount' },
      { name: 'Outcome', type: 'string', description: 'How it ended', jsonPath: '.status.outcome' },
      { name: 'Age', type: 'date', description: 'Time since creation', jsonPath: '.metadata.creationTimestamp' },
    ],
  });
}
