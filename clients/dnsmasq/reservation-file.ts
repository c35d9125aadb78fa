/**
 * The text of one host's file in a dnsmasq dhcp-hostsdir, and reading it back.
 *
 * dnsmasq 2.90 reads a hosts-dir file again when it is written (inotify) but
 * forgets nothing: entries of a deleted or emptied file stay until a SIGHUP or
 * restart (and a SIGHUP crashed it with active leases, see
 * ../shared/notes/peers.md). The newest entry for a MAC wins, so a release
 * rewrites the file with a `released` line for the MAC (`set:metalflow-released`,
 * no address): the MAC is then treated as unknown (no address when unknown MACs
 * are ignored, a pool address otherwise), live and after a restart.
 * dnsmasq also refuses a new entry whose address an entry it still holds has
 * ("duplicate dhcp-host IP address" in its log): an address released (or
 * moved off a host) is given out again only after the site's dnsmasq restarts
 * (`scripts/dnsmasq.sh restart`), which reads the hosts dir afresh.
 */
import type { DhcpReservation } from '../../model/dhcp';

/** Every file metalflow writes starts with this; a file without it is not touched. */
export const MARKER = '# metalflow dhcp reservation';
export const FILE_PREFIX = 'metalflow-';
export const RELEASED_TAG = 'metalflow-released';

export interface ReservationFile {
  host: string;
  /** The active reservation; absent once released. */
  reservation?: DhcpReservation;
  /** MACs this host held before, each with a `released` line so dnsmasq forgets their old entries. */
  released: string[];
}

/** `<namespace>/<name>` → `metalflow-<namespace>_<name>` ('_' is in neither, so the name is unambiguous; never a dotfile, which dnsmasq skips). */
export function fileNameFor(host: string): string {
  return FILE_PREFIX + host.replace('/', '_');
}

function entryLine(r: DhcpReservation): string {
  if (r.ignore) return `${r.mac},ignore`;
  const fields = [r.mac, ...(r.tags ?? []).map((t) => `set:${t}`), r.ip ?? '', ...(r.hostname ? [r.hostname] : [])];
  return fields.join(',');
}

export function renderFile(f: ReservationFile): string {
  const lines = [`${MARKER} host=${f.host}`];
  if (f.reservation) lines.push(entryLine(f.reservation));
  for (const mac of f.released) lines.push(`${mac},set:${RELEASED_TAG}`);
  return lines.join('\n') + '\n';
}

const MAC = /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/;

/** Reads back a file renderFile wrote; null when it is not metalflow's (no marker) or not in its form. */
export function parseFile(text: string): ReservationFile | null {
  const [first, ...rest] = text.split('\n').filter((l) => l.length > 0);
  const m = first?.startsWith(`${MARKER} host=`) ? first.slice(MARKER.length + ' host='.length) : null;
  if (!m) return null;
  const file: ReservationFile = { host: m, released: [] };
  for (const line of rest) {
    const [mac, ...fields] = line.split(',');
    if (!mac || !MAC.test(mac)) return null;
    if (fields.length === 1 && fields[0] === `set:${RELEASED_TAG}`) {
      file.released.push(mac);
      continue;
    }
    if (file.reservation) return null;
    if (fields.length === 1 && fields[0] === 'ignore') {
      file.reservation = { host: m, mac, ignore: true };
      continue;
    }
    const tags = fields.filter((f) => f.startsWith('set:')).map((f) => f.slice(4));
    const [ip, hostname] = fields.filter((f) => !f.startsWith('set:'));
    if (!ip) return null;
    file.reservation = { host: m, mac, ip, ...(hostname ? { hostname } : {}), ...(tags.length ? { tags } : {}) };
  }
  return file;
}
