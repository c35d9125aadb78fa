/**
 * The `direct` provisioner (metalflow's, `spec.provisioner: direct`): the
 * operations of a host that Ironic never sees. metalflow speaks to the BMC
 * itself: enrollment is the BMC pre-flight, inspection reads the Redfish
 * inventory, provisioning boots a live ISO from virtual media, and power,
 * deprovisioning and deletion are BMC power and media calls. There is no
 * node to create or remove, so `status.provisioning.ID` stays empty.
 *
 * Run through the host's provisioner (provisioner.ts) inside the host
 * workflow, each operation labelled as its own step in the Temporal UI. Every activity here
 * is level-triggered (it reads the BMC first and sends nothing when the BMC
 * already is where asked), so a retried activity never cycles power twice.
 */
import { ApplicationFailure, proxyActivities } from '@temporalio/workflow';
import { ACTIVITY_OPTIONS } from '../../common/activity-options';
import type { BmcActivities, BmcTarget } from '../../../activities/bmc/activities';
import type { ImageCacheActivities } from '../../../activities/images/cache';
import type { ConfigDriveActivities } from '../../../activities/images/config-drive';
import { BMC_TYPE_TABLE, parseBmcAddress, type BmcFamily } from '../../../model/bmc';
import { FAILURE } from '../../../model/failures';
import { required } from '../operation-common';
import { bmcOf, type HostSpec } from '../../../model/host';
import type { OperationInput, OperationOutcome } from '../operation-types';

/** Short requests: pre-flight, inventory, boot override, eject, reads. */
const quick = proxyActivities<BmcActivities>(ACTIVITY_OPTIONS.bmcCall);
/** Power changes wait (up to 2 minutes) for the BMC to report the new state, heartbeating each poll. */
const power = proxyActivities<BmcActivities>(ACTIVITY_OPTIONS.bmcCall);
const media = proxyActivities<BmcActivities>(ACTIVITY_OPTIONS.bmcMediaInsert);
const verify = proxyActivities<ImageCacheActivities>(ACTIVITY_OPTIONS.imageVerify);
/** The config drive: built from the host's Secrets and inserted (the BMC downloads it before answering), or ejected and deleted. */
const drives = proxyActivities<ConfigDriveActivities>(ACTIVITY_OPTIONS.bmcMediaInsert);

/** A host with user, network or meta data boots with a config drive beside its ISO. */
const hasConfigData = (spec: HostSpec): boolean => Boolean(spec.userData || spec.networkData || spec.metaData);

/** Ejects the config drive and deletes it from the server (a no-op for a host that had none). */
async function removeConfigDrive(t: { ref: OperationInput['ref']; spec: HostSpec }): Promise<void> {
  await drives.removeConfigDrive(t);
}

function familyOf(spec: HostSpec): BmcFamily {
  const parsed = parseBmcAddress(bmcOf(spec).address);
  if (!parsed.ok) throw failed(`spec.bmc.address: ${parsed.errors.map((e) => e.reason).join('; ')}`);
  return BMC_TYPE_TABLE[parsed.value.type].family;
}

/** Recorded on the host as an operation failure (the validator normally stops these earlier). */
const failed = (message: string): ApplicationFailure =>
  ApplicationFailure.create({ type: FAILURE.operationFailed, message, nonRetryable: true });

const target = (input: OperationInput): BmcTarget => ({ ref: input.ref, spec: required(input.spec, 'a spec') });

/** Enroll = pre-flight only: the BMC answers, the credentials work, the system exists. */
export async function directEnroll(input: OperationInput): Promise<OperationOutcome> {
  const { power: state } = await quick.preflightBmc(target(input));
  return { poweredOn: state === 'on' || state === 'powering-on' };
}

/**
 * Out-of-band inventory from Redfish. IPMI has none: the step succeeds with an
 * empty `status.hardware` and says so (as Metal3 does with inspection
 * disabled), rather than keeping the host out of `available` forever.
 */
export async function directInspect(input: OperationInput): Promise<OperationOutcome> {
  const t = target(input);
  if (t.spec.inspectionMode === 'disabled') return { note: 'inspection skipped: spec.inspectionMode is disabled' };
  if (familyOf(t.spec) !== 'redfish') {
    return { note: 'inspection skipped: an IPMI BMC has no out-of-band inventory, so status.hardware stays empty' };
  }
  const { hardware } = await quick.inspectBmc(t);
  return { hardware };
}

/** Nothing to clean or configure without Ironic. */
export async function directPrepare(_input: OperationInput): Promise<OperationOutcome> {
  return {};
}

/**
 * Boots `image` (a live ISO) from virtual media: a host already running this
 * ISO is left alone (a provision retried after a failure does not restart it);
 * otherwise a running host is powered off so that it boots the ISO, whatever
 * is inserted is ejected, the ISO (with a checksum: verified whole first) inserted, a one-time boot from CD set, and
 * the host powered on when `spec.online`. Then the BMC is read back.
 */
export async function directProvision(input: OperationInput): Promise<OperationOutcome> {
  const t = target(input);
  // As checked before the operation (image-check.ts: a resolved checksum, the cache's URL), else the spec's.
  const image = input.image ?? t.spec.image;
  // Removed while a failed attempt waited for its retry: nothing to boot; the host deprovisions next.
  if (!image) return { note: 'the image was removed before it was provisioned; deprovisioning' };
  if (image.format !== 'live-iso' || familyOf(t.spec) !== 'redfish') {
    throw failed('provisioner direct boots only live-iso images, from the virtual media of a Redfish BMC');
  }
  const [before, slot] = await Promise.all([quick.getBmcPower(t), quick.getBmcMedia(t)]);
  const isoInserted = slot?.inserted === true && slot.image === image.url;
  if (!(isoInserted && before.poweredOn)) {
    if (before.poweredOn) await power.setBmcPower({ ...t, on: false });
    if (!isoInserted) {
      // The BMC boots whatever it downloads: the whole ISO is checked first, unless the image cache did.
      if (image.checksum && !input.imageVerified) await verify.verifyImage({ image });
      await quick.ejectBmcMedia(t);
      await media.insertBmcMedia({ ...t, imageUrl: image.url });
    }
    // A pool address (spec.dhcp.ipPool) renders network_data when the spec gives none; only the allocation
    // passes, rendered in the activity.
    const pool = input.networkDataFrom;
    // User, network and meta data as an OpenStack config drive in the USB slot; its URL never leaves the activity.
    if (hasConfigData(t.spec) || pool) {
      await drives.insertConfigDrive({ ...t, ...(input.uid ? { uid: input.uid } : {}), ...(pool ? { networkDataFrom: pool } : {}) });
    }
    await quick.setBmcBootDevice({
      ...t,
      device: 'cdrom',
      persistent: false,
      mode: t.spec.bootMode === 'legacy' ? 'Legacy' : 'UEFI',
    });
    if (t.spec.online) await power.setBmcPower({ ...t, on: true });
  }
  const [after, check] = await Promise.all([quick.getBmcPower(t), quick.getBmcMedia(t)]);
  if (!(check?.inserted === true && check.image === image.url)) {
    throw failed(`the BMC does not show ${image.url} inserted after provisioning (slot: ${check?.inserted ? check.image ?? 'an unnamed image' : 'empty'})`);
  }
  if (t.spec.online && !after.poweredOn) throw failed(`the host is ${after.state} after powering it on to boot ${image.url}`);
  return { poweredOn: after.poweredOn };
}

/** Power off, then eject: the live system is stopped before its media goes away. */
export async function directDeprovision(input: OperationInput): Promise<OperationOutcome> {
  const t = target(input);
  const off = await power.setBmcPower({ ...t, on: false });
  if (familyOf(t.spec) === 'redfish') {
    await quick.ejectBmcMedia(t);
    await removeConfigDrive(t);
  }
  return { poweredOn: off.poweredOn };
}

export async function directPower(input: OperationInput): Promise<OperationOutcome> {
  const result = await power.setBmcPower({ ...target(input), on: required(input.powerOn, 'a power target') });
  return { poweredOn: result.poweredOn };
}

/** Nothing was registered anywhere: leave the host off with no media inserted. */
export async function directDelete(input: OperationInput): Promise<OperationOutcome> {
  const t = target(input);
  if (familyOf(t.spec) === 'redfish') {
    await quick.ejectBmcMedia(t);
    await removeConfigDrive(t);
  }
  await power.setBmcPower({ ...t, on: false });
  return { nodeId: '', poweredOn: false };
}
