/**
 * A hardware inventory of the size real servers report (hundreds of KB: many
 * disks with their by-path/by-id names, NICs with LLDP data), and the history
 * size Temporal records for every run of a workflow.
 */
import type { Client } from '@temporalio/client';
import { emptyStatus, type HardwareDetails, type HostStatus } from '../../model/host';

/** About `kib` KiB of inventory as JSON. */
export function largeInventory(kib: number): HardwareDetails {
  const storage: NonNullable<HardwareDetails['storage']> = [];
  const nics: NonNullable<HardwareDetails['nics']> = [];
  for (let i = 0; JSON.stringify({ storage, nics }).length < kib * 1024; i++) {
    const serial = `S${String(i).padStart(6, '0')}X${(i * 7919).toString(16).padStart(8, '0')}`;
    storage.push({
      name: `/dev/disk/by-path/pci-0000:${(i % 256).toString(16).padStart(2, '0')}:00.0-sas-phy${i}-lun-0`,
      alternateNames: [`/dev/sd${i}`, `/dev/disk/by-id/wwn-0x5000c500${serial}`, `/dev/disk/by-id/scsi-35000c500${serial}`],
      rotational: i % 3 !== 0,
      type: i % 3 === 0 ? 'SSD' : 'HDD',
      sizeBytes: 3_840_000_000_000,
      vendor: 'SEAGATE',
      model: 'ST4000NM0295',
      serialNumber: serial,
      wwn: `0x5000c500${serial}`,
      hctl: `0:0:${i}:0`,
    });
    if (i % 8 === 0) {
      nics.push({
        name: `ens${i}f0`,
        model: '0x15b3 0x1017',
        mac: `52:54:00:${((i >> 16) & 255).toString(16).padStart(2, '0')}:${((i >> 8) & 255).toString(16).padStart(2, '0')}:${(i & 255).toString(16).padStart(2, '0')}`,
        speedGbps: 25,
        pxe: i === 0,
        lldp: { switchSystemName: `leaf-${i}.rack.example`, switchPortId: `Ethernet1/${i}`, switchChassisId: `00:1c:73:${serial.slice(-6)}`, tlvs: Array.from({ length: 6 }, (_, k) => [k, `tlv-${i}-${k}-${serial}`]) },
      });
    }
  }
  return {
    systemVendor: { manufacturer: 'Example', productName: 'Storage Server 4U', serialNumber: 'SN-LARGE' },
    ramMebibytes: 1_048_576,
    cpu: { arch: 'x86_64', model: 'Example CPU', count: 128, clockMegahertz: 2400, flags: ['fpu', 'vme', 'de', 'pse'] },
    storage,
    nics,
  };
}

/** An available host's status (no Ironic node known yet) with that inventory: restored, the host registers again. */
export function statusWithInventory(hardware: HardwareDetails): HostStatus {
  return { ...emptyStatus(), provisioning: { state: 'available', ID: '' }, poweredOn: false, hardware };
}

/** Every run of the workflow with its history size (bytes, as the server counts them) and length. */
export async function runHistorySizes(client: Client, workflowId: string): Promise<{ runId: string; bytes: number; events: number }[]> {
  const runs: { runId: string; bytes: number; events: number }[] = [];
  for await (const wf of client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
    const d = await client.workflow.getHandle(workflowId, wf.runId).describe();
    runs.push({ runId: wf.runId, bytes: Number(d.raw.workflowExecutionInfo?.historySizeBytes ?? 0), events: d.historyLength });
  }
  return runs;
}
