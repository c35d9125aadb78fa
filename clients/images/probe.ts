/**
 * Probing an image URL before a deploy: does it answer, how big is it, what
 * type does the server give it, and do its first bytes fit spec.image.format.
 * A HEAD first (a 404 ends it there; its size and type are kept), then a
 * ranged GET of the first 64 KiB for the sniff, which also gives the size and
 * type when HEAD was refused or said nothing. A server that ignores the range
 * sends the whole image: the stream is cut off after 64 KiB.
 */
import type { Dispatcher } from 'undici';
import type { Image } from '../../model/host';
import { ImageError, where } from './errors';
import { fetchStart } from './http';
import { describeSniffed, formatMismatch, SNIFF_BYTES, sniffFormat, type SniffedFormat } from './sniff';

export interface ImageProbe {
  /** Bytes, when the server said (Content-Length of HEAD or a 200, or Content-Range's total). */
  size?: number;
  contentType?: string;
  /** What the first bytes show (`unknown`: no known header, i.e. raw data). */
  sniffed: SniffedFormat;
  /** The server honoured the Range header (206). */
  ranged: boolean;
}

const number = (v: string | undefined): number | undefined => (v !== undefined && /^\d+$/.test(v) ? Number(v) : undefined);

/** The total in `Content-Range: bytes 0-65535/1234567` (undefined for `*`). */
const rangeTotal = (v: string | undefined): number | undefined => number(/\/(\d+)\s*$/.exec(v ?? '')?.[1]);

export async function probeImage(dispatcher: Dispatcher, image: Pick<Image, 'url' | 'format'>): Promise<ImageProbe> {
  const { url } = image;
  // HEAD refused (405, 501, 403 from object stores that sign per method…): the GET decides.
  const head = await fetchStart(dispatcher, 'image', url, {
    method: 'HEAD',
    maxBytes: 0,
    refusedOk: (status) => status !== 404 && status !== 410,
  });
  const headOk = head.status < 300;
  const get = await fetchStart(dispatcher, 'image', url, {
    method: 'GET',
    headers: { range: `bytes=0-${SNIFF_BYTES - 1}` },
    maxBytes: SNIFF_BYTES,
  });
  const ranged = get.status === 206;
  const size =
    (headOk ? number(head.headers['content-length']) : undefined) ??
    (ranged ? rangeTotal(get.headers['content-range']) : number(get.headers['content-length']));
  const contentType = (headOk ? head.headers['content-type'] : undefined) ?? get.headers['content-type'];
  const sniffed = sniffFormat(get.body, contentType);
  if (sniffed === 'html') {
    throw new ImageError(
      'html-page',
      `the image at ${where(url)} is an HTML page (${contentType ?? 'no content type'}), not an image: most likely a login or error page; give a URL that serves the image itself`,
    );
  }
  if (get.body.length === 0) throw new ImageError('format-mismatch', `the image at ${where(url)} is empty`);
  const mismatch = formatMismatch(image.format, sniffed);
  if (mismatch) throw new ImageError('format-mismatch', `the image at ${where(url)}: ${mismatch}`);
  return { ...(size !== undefined ? { size } : {}), ...(contentType ? { contentType } : {}), sniffed, ranged };
}

export const describeProbe = (p: ImageProbe): string =>
  `${describeSniffed(p.sniffed)}, ${p.size !== undefined ? `${p.size} bytes` : 'size not given'}, ${p.contentType ?? 'no content type'}`;
