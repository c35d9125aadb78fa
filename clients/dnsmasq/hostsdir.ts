/**
 * Reservations in a dnsmasq dhcp-hostsdir: one file per host, written
 * atomically (a dotfile, which dnsmasq skips, then rename: dnsmasq reads the
 * file once, whole). Writing what is already there writes nothing, so a
 * retried activity causes no reload. Only files named `metalflow-*` that start
 * with metalflow's marker line are ever read, rewritten or removed.
 */
import { randomBytes } from 'node:crypto';
import { readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { formatFieldErrors } from '../../model/field-error';
import { validateReservation, type DhcpReservation } from '../../model/dhcp';
import { DhcpError } from './errors';
import { fileNameFor, FILE_PREFIX, parseFile, renderFile, type ReservationFile } from './reservation-file';

export type WriteOutcome = 'written' | 'unchanged' | 'absent';

function ioError(what: string, err: unknown): DhcpError {
  const code = (err as NodeJS.ErrnoException | undefined)?.code ?? 'error';
  return new DhcpError('io', `${what}: ${code}`);
}

async function readText(path: string): Promise<string | null> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw ioError(`cannot read ${path}`, err);
  }
}

async function writeAtomically(dir: string, name: string, text: string): Promise<void> {
  const tmp = join(dir, `.${name}.${randomBytes(4).toString('hex')}.tmp`);
  try {
    await writeFile(tmp, text, { mode: 0o644, flag: 'wx' });
    await rename(tmp, join(dir, name));
  } catch (err) {
    await rm(tmp, { force: true }).catch(() => undefined);
    throw ioError(`cannot write ${join(dir, name)}`, err);
  }
}

/** The file for `host`, or null when there is none; a file without the marker is a 'not-owned' error. */
async function readOwn(dir: string, host: string): Promise<ReservationFile | null> {
  const path = join(dir, fileNameFor(host));
  const text = await readText(path);
  if (text === null) return null;
  const file = parseFile(text);
  if (!file || file.host !== host) throw new DhcpError('not-owned', `${path} was not written by metalflow for ${host}; left alone`);
  return file;
}

/** Every metalflow reservation file in the dir (files without the marker are skipped). */
export async function listReservations(dir: string): Promise<ReservationFile[]> {
  let names: string[];
  try {
    names = (await readdir(dir)).filter((n) => n.startsWith(FILE_PREFIX));
  } catch (err) {
    throw ioError(`cannot list ${dir}`, err);
  }
  const files: ReservationFile[] = [];
  for (const name of names) {
    const text = await readText(join(dir, name));
    const file = text === null ? null : parseFile(text);
    if (file && fileNameFor(file.host) === name) files.push(file);
  }
  return files;
}

/**
 * Writes the host's reservation. Refuses ('conflict') a MAC or address another
 * host's active reservation holds. A MAC the host held before gets a released
 * line; other hosts' released lines for this MAC are dropped (after a dnsmasq
 * restart, files are read in directory order, not by age).
 */
export async function writeReservation(dir: string, reservation: DhcpReservation): Promise<WriteOutcome> {
  const valid = validateReservation(reservation);
  if (!valid.ok) throw new DhcpError('invalid', formatFieldErrors(valid.errors));
  const r = valid.value;
  const all = await listReservations(dir);
  for (const other of all) {
    const o = other.reservation;
    if (other.host === r.host || !o) continue;
    if (o.mac === r.mac) throw new DhcpError('conflict', `MAC ${r.mac} is reserved for ${other.host}`);
    if (r.ip && o.ip === r.ip) throw new DhcpError('conflict', `address ${r.ip} is reserved for ${other.host}`);
  }
  const own = await readOwn(dir, r.host);
  const previous = own?.reservation?.mac;
  const released = new Set(own?.released ?? []);
  if (previous && previous !== r.mac) released.add(previous);
  released.delete(r.mac);
  const outcome = await writeIfChanged(dir, own, { host: r.host, reservation: r, released: [...released].sort() });
  for (const other of all) {
    if (other.host !== r.host && other.released.includes(r.mac)) {
      await writeIfChanged(dir, other, { ...other, released: other.released.filter((m) => m !== r.mac) });
    }
  }
  return outcome;
}

/** Releases the host's reservation: its MAC then gets what an unknown MAC gets. 'absent' when the host has no file. */
export async function releaseReservation(dir: string, host: string): Promise<WriteOutcome> {
  const own = await readOwn(dir, host);
  if (!own) return 'absent';
  const released = new Set(own.released);
  if (own.reservation) released.add(own.reservation.mac);
  return writeIfChanged(dir, own, { host, released: [...released].sort() });
}

async function writeIfChanged(dir: string, before: ReservationFile | null, after: ReservationFile): Promise<WriteOutcome> {
  const text = renderFile(after);
  if (before && renderFile(before) === text) return 'unchanged';
  await writeAtomically(dir, fileNameFor(after.host), text);
  return 'written';
}
