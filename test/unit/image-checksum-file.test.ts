import { describe, expect, it } from 'vitest';
import { imageFileName, MD5_WARNING, parseChecksumFile } from '../../clients/images/checksum-file';
import { ImageError } from '../../clients/images/errors';

const A = 'a'.repeat(64);
const B = 'B'.repeat(64);
const SRC = 'images.example (…/SHA256SUMS)';

const failure = (fn: () => unknown): ImageError => {
  try {
    fn();
  } catch (err) {
    if (err instanceof ImageError) return err;
    throw err;
  }
  throw new Error('expected an ImageError');
};

describe('checksum files', () => {
  it('finds the line for the image in a sha256sum list, text and binary mode', () => {
    const text = `${A}  ubuntu.iso\n${B} *ubuntu.qcow2\n`;
    expect(parseChecksumFile(text, 'ubuntu.iso', SRC)).toEqual({ value: A, algorithm: 'sha256' });
    expect(parseChecksumFile(text, 'ubuntu.qcow2', SRC)).toEqual({ value: B.toLowerCase(), algorithm: 'sha256' });
  });

  it('reads a bare single hash, BSD-style lines, ./ prefixes, CRLF and comments', () => {
    expect(parseChecksumFile(`${A}\r\n`, 'anything.img', SRC)).toEqual({ value: A, algorithm: 'sha256' });
    expect(parseChecksumFile(`\uFEFF${A}  anything.img\n`, 'anything.img', SRC).value).toBe(A);
    expect(parseChecksumFile(`# made by hand\nSHA512 (disk.raw) = ${'c'.repeat(128)}\n`, 'disk.raw', SRC)).toEqual({ value: 'c'.repeat(128), algorithm: 'sha512' });
    expect(parseChecksumFile(`${A}  ./disk.raw\r\n${B}  other.raw\r\n`, 'disk.raw', SRC).value).toBe(A);
  });

  it('accepts md5 with a warning', () => {
    expect(parseChecksumFile(`${'d'.repeat(32)}  disk.qcow2\n`, 'disk.qcow2', SRC)).toEqual({ value: 'd'.repeat(32), algorithm: 'md5', warning: MD5_WARNING });
  });

  it('a file without a line for the image is a clear error naming the file name, not the URL', () => {
    const err = failure(() => parseChecksumFile(`${A}  ubuntu.iso\n${B}  ubuntu.qcow2\n`, 'debian.qcow2', SRC));
    expect(err.type).toBe('checksum-missing');
    expect(err.message).toBe("the checksum file at images.example (…/SHA256SUMS) has no line for the image's file name debian.qcow2 (it lists 2 files)");
  });

  it('refuses what is not a checksum file, an odd hash length, and a type that contradicts checksumType', () => {
    expect(failure(() => parseChecksumFile('hello world\n', 'x', SRC)).type).toBe('checksum-file');
    expect(failure(() => parseChecksumFile(`${'e'.repeat(40)}  x.img\n`, 'x.img', SRC)).message).toMatch(/40 hex digits, which fits no supported algorithm/);
    expect(failure(() => parseChecksumFile(`${A}  x.img\n`, 'x.img', SRC, 'sha512')).message).toBe(
      'spec.image.checksumType is sha512, but the checksum for x.img in the file at images.example (…/SHA256SUMS) is sha256 (64 hex digits)',
    );
    expect(parseChecksumFile(`${A}  x.img\n`, 'x.img', SRC, 'auto').algorithm).toBe('sha256');
  });

  it("takes the image's file name from its URL, never its query string", () => {
    expect(imageFileName('https://bucket.example/path/disk%20one.qcow2?X-Amz-Signature=secret')).toBe('disk one.qcow2');
  });
});
