import { createServer } from 'node:net';

/** A TCP port on 127.0.0.1 that nothing listens on (bound, then released). */
export async function unusedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}
