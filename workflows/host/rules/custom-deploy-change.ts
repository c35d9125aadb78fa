/**
 * BMO's provisioningCancelled for a custom deploy:
 * a provisioned host whose `spec.customDeploy.method` differs from the one it
 * was deployed with (`status.provisioning.customDeploy.method`), or was
 * removed, is deprovisioned and provisioned again, as a changed image URL is
 * (metal3Transition); so is a host deployed with a method whose image went
 * away or changed its URL while the method stayed.
 */
import type { HostState } from '../../../contracts/host';
import { customDeployMethod } from '../../../model/custom-deploy';

/** The method the host was deployed with, from its status (as Metal3 records it). */
function deployedMethod(s: HostState): string | undefined {
  // A status restored from Metal3 carries it as BMO wrote it (the schema stores it as given).
  const method = (s.status.provisioning.customDeploy as { method?: unknown } | undefined)?.method;
  return typeof method === 'string' && method !== '' ? method : undefined;
}

/** True when BMO would cancel this provisioned host's deployment for its custom deploy. */
export function customDeployChanged(s: HostState): boolean {
  const spec = s.spec;
  if (!spec?.bmc || s.status.provisioning.state !== 'provisioned') return false;
  if (s.deleteRequested || s.nodeLost || s.detached || s.directives?.detached || s.needsAttach) return false;
  const deployed = deployedMethod(s);
  const wanted = customDeployMethod(spec);
  if (wanted === undefined) return deployed !== undefined;
  if (deployed !== undefined && deployed !== wanted) return true;
  const running = s.status.provisioning.image?.url;
  return running !== undefined && running !== '' && spec.image?.url !== running;
}
