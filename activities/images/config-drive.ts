/**
 * The direct provisioner's config drive (docs/images.md, *Config drive for the direct provisioner*):
 * built from the host's Secrets as an ISO 9660 `config-2` volume
 * (clients/images/config-drive.ts), kept in the store the image cache's
 * server serves, and inserted in the BMC's USB stick/floppy slot beside the
 * live ISO. The data and the drive's URL (an unguessable name: whoever has it
 * can read the user data) stay inside the activity: nothing is returned, and
 * a BMC error quoting the URL has it replaced. Level-triggered: the same
 * content gets the same URL, and a slot already holding it is left alone.
 */
import { ApplicationFailure } from '@temporalio/activity';
import { FAILURE } from '../../model/failures';
import { bmcOf } from '../../model/host';
import { isBmcError, RedfishBmc } from '../../clients/bmc/bmc-client';
import { buildConfigDrive, type ConfigDriveStore } from '../../clients/images/config-drive';
import type { SecretReader } from '../../clients/secrets/secret-store';
import { bmcSessions, type BmcActivityDeps, type BmcTarget } from '../bmc/activities';
import { configDriveData } from './config-drive-data';
import type { AddressNetworkData } from '../../model/network-data';

export interface ServedConfigDrives {
  store: ConfigDriveStore;
  /** The image cache's URL (METALFLOW_IMAGE_CACHE_URL): the BMC downloads the drive from there. */
  baseUrl: string;
}

const REDACTED = '<the config drive URL>';

export function createConfigDriveActivities(deps: BmcActivityDeps & { secrets: SecretReader; drives?: ServedConfigDrives }) {
  const { withBmc } = bmcSessions(deps);

  const redfishOf = (t: BmcTarget, bmc: unknown): RedfishBmc => {
    if (bmc instanceof RedfishBmc) return bmc;
    throw ApplicationFailure.nonRetryable(`BMC ${bmcOf(t.spec).address} has no virtual media for a config drive`, FAILURE.operationFailed, { kind: 'unsupported' });
  };

  return {
    /** Builds the host's drive and inserts it in the USB/floppy slot; `uid` is meta_data.uuid. */
    async insertConfigDrive(input: BmcTarget & { uid?: string; networkDataFrom?: AddressNetworkData }): Promise<void> {
      const drives = deps.drives;
      if (!drives) {
        throw ApplicationFailure.nonRetryable(
          'a config drive for provisioner direct is served by the image cache: set METALFLOW_IMAGE_CACHE_DIR and METALFLOW_IMAGE_CACHE_URL on the workers',
          FAILURE.operationFailed,
        );
      }
      const { spec, ref } = input;
      const data = await configDriveData(deps.secrets, ref, {
        userData: spec.userData,
        networkData: spec.networkData,
        metaData: spec.metaData,
        ...(input.uid ? { uid: input.uid } : {}),
        ...(input.networkDataFrom ? { networkDataFrom: input.networkDataFrom } : {}),
      });
      let iso: Buffer;
      try {
        iso = await buildConfigDrive(data);
      } catch (err) {
        throw ApplicationFailure.nonRetryable((err as Error).message, FAILURE.operationFailed);
      }
      const url = `${drives.baseUrl.replace(/\/+$/, '')}${await drives.store.put(ref, iso)}`;
      await withBmc(input, async (bmc) => {
        const redfish = redfishOf(input, bmc);
        try {
          await redfish.insertMedia(url, 'usb');
        } catch (err) {
          if (err instanceof Error) err.message = err.message.split(url).join(REDACTED);
          throw err;
        }
      });
    },

    /** Ejects the USB/floppy slot and deletes the host's drives (nothing to do when there are none). */
    async removeConfigDrive(input: BmcTarget): Promise<void> {
      await withBmc(input, async (bmc) => {
        if (!(bmc instanceof RedfishBmc)) return;
        // A BMC without such a slot never had a drive inserted.
        await bmc.ejectMedia('usb').catch((err: unknown) => {
          if (!(isBmcError(err) && err.kind === 'unsupported')) throw err;
        });
      });
      await deps.drives?.store.removeHost(input.ref);
    },
  };
}

export type ConfigDriveActivities = ReturnType<typeof createConfigDriveActivities>;
