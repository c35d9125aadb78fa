/** Kubernetes documents the k8s tests apply: a credentials Secret and a Metal3 BareMetalHost. */
import { randomMac } from '../support/harness';

export const secretDoc = (name: string, data: Record<string, string>) =>
  ({ apiVersion: 'v1', kind: 'Secret', metadata: { name }, type: 'Opaque', stringData: data });

export const hostDoc = (name: string, spec: Record<string, unknown>, annotations: Record<string, string> = {}) =>
  ({ apiVersion: 'metal3.io/v1alpha1', kind: 'BareMetalHost', metadata: { name, annotations }, spec });

/** The Metal3 user guide's host, with a BMC address a test may reach (fake-hardware on the loopback Ironic). */
export const fakeHostSpec = (name: string, over: Record<string, unknown> = {}) => ({
  online: true,
  bootMACAddress: randomMac(),
  bmc: { address: `fake://${name}`, credentialsName: `${name}-bmc-secret` },
  ...over,
});
