/**
 * An Event write refused for a passing reason is sent again (an API server initializing its storage answers 429),
 * a refusal is not, and the attempts are bounded: a held firmware change's Event is written once and never again.
 */
import { describe, expect, it } from 'vitest';
import { EVENT_WRITE_RETRIES, withEventRetries } from '../../clients/kubernetes/events';
import { KubeError } from '../../clients/kubernetes/kube-error';

function writer(failures: unknown[]): { write: () => Promise<void>; calls: () => number } {
  let calls = 0;
  return {
    write: async () => {
      const failure = failures[calls++];
      if (failure) throw failure;
    },
    calls: () => calls,
  };
}

describe('withEventRetries', () => {
  const pauses: number[] = [];
  const sleep = async (ms: number) => void pauses.push(ms);

  it('writes again after 429, 5xx and no answer, pausing longer each time', async () => {
    pauses.length = 0;
    const w = writer([new KubeError(429, 'storage is (re)initializing'), new KubeError(503, 'unavailable'), new Error('socket hang up')]);
    await withEventRetries(w.write, sleep);
    expect(w.calls()).toBe(4);
    expect(pauses).toEqual([250, 500, 1000]);
  });

  it('does not write again what the API server refused, or a name already taken', async () => {
    for (const refusal of [new KubeError(422, 'invalid'), new KubeError(404, 'namespace gone'), new KubeError(409, 'exists')]) {
      const w = writer([refusal]);
      await expect(withEventRetries(w.write, sleep)).rejects.toBe(refusal);
      expect(w.calls()).toBe(1);
    }
  });

  it('gives up after its last attempt with the last error', async () => {
    const busy = Array.from({ length: 10 }, (_, i) => new KubeError(429, `busy ${i}`));
    const w = writer(busy);
    await expect(withEventRetries(w.write, sleep)).rejects.toBe(busy[EVENT_WRITE_RETRIES.attempts - 1]);
    expect(w.calls()).toBe(EVENT_WRITE_RETRIES.attempts);
  });
});
