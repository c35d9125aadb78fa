/** The Ironic API microversions metalflow sends, and how two of them compare. */

/** Everything metalflow sends needs 1.81 (node inventory); newer servers are asked for the same. */
export const REQUIRED_MICROVERSION = '1.81';
/** Ironic accepts `abort` in `wait call-back` (a deploy waiting for its agent) from this version (Ironic 2025.2). */
export const DEPLOY_ABORT_MICROVERSION = '1.110';
/** The node's own `disable_power_off` (Ironic 2025.1): Ironic then never powers the node off, only reboots it. */
export const DISABLE_POWER_OFF_MICROVERSION = '1.95';
/** The node's `health` field. */
export const NODE_HEALTH_MICROVERSION = '1.109';
/** Ironic's `service` verb (servicing an active node with service steps) from this version (Ironic 2023.2 / 23.0). */
export const SERVICE_MICROVERSION = '1.87';

const versionNumber = (v: string): [number, number] => {
  const [major = '0', minor = '0'] = v.split('.');
  return [Number(major), Number(minor)];
};

export function compareMicroversions(a: string, b: string): number {
  const [am, an] = versionNumber(a);
  const [bm, bn] = versionNumber(b);
  return am !== bm ? am - bm : an - bn;
}
