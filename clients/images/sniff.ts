/**
 * What an image's first bytes say it is, and whether that fits the format
 * the spec declares. Pure (no I/O), so the rules are unit-tested on bytes.
 *
 * Recognised: qcow2 (`QFI\xfb`), VMDK (sparse `KDMV`, or a text descriptor),
 * VDI (VirtualBox's pre-header text and signature 0xbeda107f at 0x40), ISO 9660
 * (`CD001` at 0x8001, so the window must hold 32 KiB + 6 bytes) and an HTML
 * page (a login or error page served with 200). Nothing proves a raw disk:
 * raw is "none of the above", and a raw image may begin with anything.
 */
import type { Image } from '../../model/host';

/** How many bytes the sniffer wants: ISO 9660's descriptor sits at 0x8001. */
export const SNIFF_BYTES = 65_536;

export type SniffedFormat = 'qcow2' | 'vmdk' | 'vdi' | 'iso' | 'html' | 'unknown';

const ascii = (bytes: Uint8Array, at: number, length: number): string =>
  Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1', at, Math.min(bytes.length, at + length));

function looksLikeHtml(bytes: Uint8Array): boolean {
  // A UTF-8 byte order mark and leading blanks (a template's first newline) come before the tag.
  const head = ascii(bytes, 0, 512).replace(/^\uFEFF|^\u00EF\u00BB\u00BF/, '').trimStart().toLowerCase();
  return head.startsWith('<!doctype html') || head.startsWith('<html') || (head.startsWith('<?xml') && head.includes('<html'));
}

/** The format the first bytes show; `contentType` (the server's header) only to recognise an HTML page. */
export function sniffFormat(bytes: Uint8Array, contentType?: string): SniffedFormat {
  if (ascii(bytes, 0, 4) === 'QFI\xfb') return 'qcow2';
  if (ascii(bytes, 0, 4) === 'KDMV' || ascii(bytes, 0, 21) === '# Disk DescriptorFile') return 'vmdk';
  const vdiSignature = bytes.length >= 0x44 && bytes[0x40] === 0x7f && bytes[0x41] === 0x10 && bytes[0x42] === 0xda && bytes[0x43] === 0xbe;
  if (vdiSignature || ascii(bytes, 0, 40).includes('VirtualBox Disk Image')) return 'vdi';
  if (ascii(bytes, 0x8001, 5) === 'CD001') return 'iso';
  if (looksLikeHtml(bytes) || /^text\/html\b/i.test(contentType ?? '')) return 'html';
  return 'unknown';
}

const SHOWN: Record<SniffedFormat, string> = {
  qcow2: 'a qcow2 image',
  vmdk: 'a VMDK image',
  vdi: 'a VDI image',
  iso: 'an ISO 9660 image',
  html: 'an HTML page',
  unknown: 'no known image header (raw data)',
};

export const describeSniffed = (format: SniffedFormat): string => SHOWN[format];

/**
 * Why bytes of `sniffed` cannot be an image of the declared `format`, or
 * undefined when they can. An unset format is Ironic's to detect: anything but
 * HTML passes. Declared raw, an ISO passes too (hybrid ISOs are written to disk
 * as they are); a container format (qcow2, VMDK, VDI) does not: Ironic would
 * write its header to the disk as if it were the disk.
 */
export function formatMismatch(format: Image['format'], sniffed: SniffedFormat): string | undefined {
  if (sniffed === 'html' || format === undefined) return undefined;
  const fits: Record<NonNullable<Image['format']>, (s: SniffedFormat) => boolean> = {
    raw: (s) => s === 'unknown' || s === 'iso',
    qcow2: (s) => s === 'qcow2',
    vmdk: (s) => s === 'vmdk',
    vdi: (s) => s === 'vdi',
    'live-iso': (s) => s === 'iso',
  };
  if (fits[format](sniffed)) return undefined;
  return `spec.image.format is ${format}, but the image's first bytes are ${describeSniffed(sniffed)}`;
}
