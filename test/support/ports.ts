import { createServer } from 'node:net';

/**
 * Where free ports are looked for: above the fixed ports of the test stack, the chaos and bench stacks
 * (16385-24999, shifted by at most 800 in a second checkout), below the kernel's ephemeral range (32768
 * and up on Linux). A port the kernel hands out for outgoing connections can be taken between this
 * check and the service's bind, and a service given port P often binds P+1..P+3 as well (own-ironic.ts):
 * in the ephemeral range a busy suite made that happen.
 */
const FIRST = 25_000;
const LAST = 32_000;
/** Consecutive ports checked free together: own-ironic.ts binds the port given and the three after it. */
const BLOCK = 4;

async function free(port: number): Promise<boolean> {
  const server = createServer();
  const bound = await new Promise<boolean>((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => resolve(true));
  });
  if (bound) await new Promise<void>((r) => server.close(() => r()));
  return bound;
}

/** Blocks this process handed out: not yet bound by their service when the next caller asks. */
const given = new Set<number>();

/** A TCP port on 127.0.0.1 that nothing listens on, with the three after it free too (each bound, then released). */
export async function unusedPort(): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = FIRST + Math.floor(Math.random() * (LAST - FIRST - BLOCK));
    if ([...given].some((g) => Math.abs(g - port) < BLOCK)) continue;
    // Held before the checks' awaits: calls made at once (Promise.all) do not pick overlapping blocks.
    given.add(port);
    let all = true;
    for (let i = 0; i < BLOCK && all; i++) all = await free(port + i);
    if (all) return port;
    given.delete(port);
  }
  throw new Error(`no ${BLOCK} consecutive free ports on 127.0.0.1 between ${FIRST} and ${LAST}`);
}
