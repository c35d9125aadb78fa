/**
 * A test file's harness whose worker reaches Ironic through the recording
 * proxy (ironic-proxy.ts), set up and torn down by the file's hooks.
 */
import { afterAll, beforeAll } from 'vitest';
import { IRONIC_URL } from './env';
import { IronicProxy } from '../../bench/support/ironic-proxy';
import { startHarness, type Harness } from './harness';
import { hostWorkflowId } from '../../model/host-ref';

export interface ProxiedHarness {
  readonly h: Harness;
  readonly proxy: IronicProxy;
}

export function useProxiedHarness(opts: Omit<Parameters<typeof startHarness>[0] & object, 'ironicUrl'> = {}): ProxiedHarness {
  let h: Harness | undefined;
  let proxy: IronicProxy | undefined;
  beforeAll(async () => {
    proxy = new IronicProxy(IRONIC_URL);
    await proxy.start();
    h = await startHarness({ ...opts, ironicUrl: proxy.url });
  });
  afterAll(async () => {
    await h?.close();
    await proxy?.stop();
  });
  const ready = <T>(v: T | undefined): T => {
    if (v === undefined) throw new Error('the proxied harness is not set up yet');
    return v;
  };
  return {
    get h() {
      return ready(h);
    },
    get proxy() {
      return ready(proxy);
    },
  };
}

/** Names of the hosts a test file creates in `namespace`: deleted after all its tests, each deletion waited out. */
export function hostsRemovedAfterAll(ctx: ProxiedHarness, namespace: string): string[] {
  const created: string[] = [];
  afterAll(async () => {
    const ref = (name: string) => ({ namespace, name });
    for (const name of created) await ctx.h.hosts.remove(ref(name)).catch(() => undefined);
    await Promise.all(created.map((name) => ctx.h.client.workflow.getHandle(hostWorkflowId(ref(name))).result().catch(() => undefined)));
  }, 180_000);
  return created;
}
