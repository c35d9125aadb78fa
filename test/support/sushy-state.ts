/** What sushy-tools itself reports for a system (read from it, not from metalflow's view): power, boot override, the CD slot. */
import { request } from 'undici';

const SUSHY_AUTH = `Basic ${Buffer.from('admin:password').toString('base64')}`;

export async function redfishGet(base: string, path: string): Promise<Record<string, any>> {
  const res = await request(`${base}${path}`, { headers: { authorization: SUSHY_AUTH } });
  const body = (await res.body.json()) as Record<string, any>;
  if (res.statusCode !== 200) throw new Error(`GET ${path}: ${res.statusCode} ${JSON.stringify(body)}`);
  return body;
}

export interface SushyState {
  power: string;
  bootTarget: string;
  bootMode: string;
  inserted: boolean;
  image: string | null;
}

/** The system's power and boot override, and its CD slot; with `mediaType`, the slot of that type (e.g. Floppy, USBStick). */
export async function sushyState(base: string, system: string, mediaType: string[] = ['CD', 'DVD']): Promise<SushyState> {
  const sys = await redfishGet(base, system);
  let collection: string | undefined = sys.VirtualMedia?.['@odata.id'];
  if (!collection) collection = (await redfishGet(base, sys.Links.ManagedBy[0]['@odata.id'])).VirtualMedia['@odata.id'];
  const members = (await redfishGet(base, collection!)).Members as { '@odata.id': string }[];
  for (const m of members) {
    const slot = await redfishGet(base, m['@odata.id']);
    if ((slot.MediaTypes as string[]).some((t) => mediaType.includes(t))) {
      return {
        power: sys.PowerState,
        bootTarget: sys.Boot.BootSourceOverrideTarget,
        bootMode: sys.Boot.BootSourceOverrideMode,
        inserted: slot.Inserted === true,
        image: slot.Image || null,
      };
    }
  }
  throw new Error(`sushy shows no ${mediaType.join('/')} slot`);
}
