/** Test setup on a Redfish system of the test stack's sushy-tools, through metalflow's own BMC client. */
import { openBmc } from '../../clients/bmc/bmc-client';
import { parseBmcAddress } from '../../model/bmc';

/**
 * The system off, its virtual media empty and its next boot from disk,
 * whatever an earlier run left, so a boot from CD afterwards is the workflow's doing.
 */
export async function resetRedfishSystem(address: string): Promise<void> {
  const parsed = parseBmcAddress(address);
  if (!parsed.ok) throw new Error(`bad test address ${address}`);
  const bmc = await openBmc(parsed.value, { username: 'admin', password: 'password' });
  try {
    await bmc.ejectMedia!();
    await bmc.setBootDevice('disk', { mode: 'UEFI' });
    await bmc.setPower('off', { timeoutMs: 30_000, pollIntervalMs: 200 });
  } finally {
    await bmc.close();
  }
}
