/**
 * The whole-disk image the agent-path tests deploy, as a real one is: a GPT
 * and one partition of random bytes (sectors 2048-14335, 1 MiB to 7 MiB of
 * 8 MiB), as raw bytes and as the qcow2 the agent downloads.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, ftruncateSync, openSync, readFileSync, readSync, writeSync } from 'node:fs';
import { join } from 'node:path';

const MiB = 2 ** 20;

export interface AgentImage {
  raw: Buffer;
  qcow2: Buffer;
  /** The partition's first byte and the byte after its last. */
  partStart: number;
  partEnd: number;
}

/** Builds the image in `dir` (sgdisk, qemu-img). */
export function buildAgentImage(dir: string): AgentImage {
  const partStart = 1 * MiB;
  const partEnd = 7 * MiB;
  const rawPath = join(dir, 'image.raw');
  const fd = openSync(rawPath, 'w');
  ftruncateSync(fd, 8 * MiB);
  closeSync(fd);
  execFileSync('sgdisk', ['-n', `1:${partStart / 512}:${partEnd / 512 - 1}`, rawPath], { stdio: 'ignore' });
  const data = randomBytes(partEnd - partStart);
  const w = openSync(rawPath, 'r+');
  writeSync(w, data, 0, data.length, partStart);
  closeSync(w);
  execFileSync('qemu-img', ['convert', '-f', 'raw', '-O', 'qcow2', rawPath, join(dir, 'image.qcow2')]);
  return { raw: readFileSync(rawPath), qcow2: readFileSync(join(dir, 'image.qcow2')), partStart, partEnd };
}

/** `length` bytes of a file from `offset`. */
export function readRange(path: string, offset: number, length: number): Buffer {
  const fd = openSync(path, 'r');
  try {
    const b = Buffer.alloc(length);
    readSync(fd, b, 0, length, offset);
    return b;
  } finally {
    closeSync(fd);
  }
}
