/**
 * A test file's harness whose worker reaches Ironic through the recording
 * proxy (ironic-proxy.ts), set up and torn down by the file's hooks.
 */
import { afterAll, beforeAll } from 'vitest';
import { IRONIC_URL } from './env';
import { IronicProxy } from './ironic-proxy';
import { startHarness, type Harness } from './harness';

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
