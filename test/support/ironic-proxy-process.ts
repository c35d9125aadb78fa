/**
 * The recording proxy (ironic-proxy.ts) in a process of its own, for tests
 * whose own event loop blocks (the k8s tests wait in synchronous kubectl
 * calls, during which a proxy in the test process answers nothing). Each
 * request is appended to a JSON-lines file as it arrives.
 * `node --import tsx test/support/ironic-proxy-process.ts <target> <file>`
 * prints `listening <url>` once it serves.
 */
import { appendFileSync } from 'node:fs';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { IronicProxy, type RecordedRequest } from '../../bench/support/ironic-proxy';

/** Starts the proxy process; resolves with its URL and a reader of what it recorded. */
export async function startProxyProcess(target: string, file: string): Promise<{ url: string; requests(): RecordedRequest[]; stop(): void }> {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'ironic-proxy-process.ts'), target, file], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening (\S+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    child.on('exit', (code) => reject(new Error(`the Ironic proxy process exited (${code}) before it listened`)));
  });
  return {
    url,
    requests: () =>
      existsSync(file)
        ? readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as RecordedRequest)
        : [],
    stop: () => void child.kill('SIGKILL'),
  };
}

if (process.argv[1]?.endsWith('ironic-proxy-process.ts')) {
  const [target, file] = process.argv.slice(2);
  if (!target || !file) throw new Error('usage: ironic-proxy-process.ts <target> <file>');
  const proxy = new IronicProxy(target);
  const push = proxy.requests.push.bind(proxy.requests);
  proxy.requests.push = (...items: RecordedRequest[]) => {
    for (const r of items) appendFileSync(file, `${JSON.stringify(r)}\n`);
    return push(...items);
  };
  await proxy.start();
  console.log(`listening ${proxy.url}`);
}
