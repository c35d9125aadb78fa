/**
 * One mapping from Ironic's answers to the failures the workflows branch on
 * (activities/ironic/node-driver.ts `translate`, used by every Ironic
 * activity, power included), against the test stack's real Ironic behind a
 * recording proxy: a verb on a node Ironic does not have is "node gone" at
 * once, not a transient retried a dozen times; a success that is not JSON and
 * a bug in metalflow are final; too-old is IronicTooOld wherever it comes
 * from; node ids are encoded in paths, so an id cannot reach another resource;
 * Ironic's 409 refusing a power off (disable_power_off) is final and says why.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApplicationFailure } from '@temporalio/common';
import { IronicClient, IronicError } from '../../clients/ironic/client';
import { translate, wrap } from '../../activities/ironic/node-driver';
import { createPowerActivities } from '../../activities/power/activities';
import { FAILURE } from '../../model/failures';
import { IronicProxy } from '../../bench/support/ironic-proxy';
import { IRONIC_URL } from '../support/env';
import { isPowerChange, reachedPeer } from '../../bench/support/ironic-proxy';
import { DISABLE_POWER_OFF_MICROVERSION } from '../../clients/ironic/microversions';

let proxy: IronicProxy;
let ironic: IronicClient;

beforeAll(async () => {
  proxy = new IronicProxy(IRONIC_URL);
  await proxy.start();
  ironic = new IronicClient({ url: proxy.url });
});
afterAll(async () => {
  await proxy?.stop();
});

async function failureOf(p: Promise<unknown>): Promise<ApplicationFailure> {
  const err = await p.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(ApplicationFailure);
  return err as ApplicationFailure;
}

describe('Ironic error mapping', () => {
  it('a verb on a node Ironic does not have is IronicNodeGone, final, naming the node', async () => {
    const id = randomUUID();
    const failure = await failureOf(wrap(() => ironic.setProvisionState(id, 'manage'))());
    expect(failure).toMatchObject({ type: FAILURE.nodeGone, nonRetryable: true, details: [{ nodeId: id }] });
    const power = await failureOf(wrap(() => ironic.setPowerState(id, 'power on'))());
    expect(power).toMatchObject({ type: FAILURE.nodeGone, nonRetryable: true });
  });

  it('encodes node ids in paths: an id with "/", "?" or ".." names no other resource', async () => {
    const id = '../drivers/fake-hardware?x=1';
    const sent = proxy.requests.length;
    const err = await ironic.setProvisionState(id, 'manage').then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(IronicError);
    expect(proxy.requests.slice(sent).map((r) => r.path)).toEqual(['/v1/nodes/..%2Fdrivers%2Ffake-hardware%3Fx%3D1/states/provision']);
    // Ironic sees the whole id as one node name, and refuses it as one.
    expect(err).toMatchObject({ kind: 'rejected' });
    await expect(ironic.getNodeState(id, ['uuid'])).rejects.toMatchObject({ kind: 'rejected', message: expect.stringContaining('Expected UUID or name for node') });
  });

  it('a success whose body is not JSON is final (InternalError), not retried as if Ironic were busy', async () => {
    const id = randomUUID();
    proxy.answerRaw((r) => r.path.startsWith(`/v1/nodes/${id}`), 1, 200, '<html>captive portal</html>');
    const failure = await failureOf(wrap(() => ironic.getNode(id))());
    expect(failure).toMatchObject({ type: FAILURE.internal, nonRetryable: true });
    expect(failure.message).toMatch(/HTTP 200 with a body that is not JSON \("<html>captive portal<\/html>"\)/);
  });

  it('a bug in metalflow (TypeError) is final; too-old is IronicTooOld; a busy Ironic stays transient', async () => {
    const bug = await failureOf(wrap(async () => (undefined as unknown as { x: () => void }).x())());
    expect(bug).toMatchObject({ type: FAILURE.internal, nonRetryable: true });
    expect(bug.message).toMatch(/^internal error in metalflow: TypeError: /);
    const tooOld = await ironic.requireVersion('1.999', 'a test feature').then(() => undefined, (e: unknown) => e);
    expect(tooOld).toBeInstanceOf(IronicError);
    const mapped = await failureOf(Promise.resolve().then(() => translate(tooOld)));
    expect(mapped).toMatchObject({ type: FAILURE.ironicTooOld, nonRetryable: true });
    const id = randomUUID();
    proxy.fail((r) => r.path.startsWith(`/v1/nodes/${id}`), 1, 503, 'busy');
    expect(await failureOf(wrap(() => ironic.getNode(id))())).toMatchObject({ type: FAILURE.transient, nonRetryable: false });
  });

  it("Ironic's 409 for a power off of a node whose disable_power_off is set is IronicRejected at once, saying why, sent once", async (ctx) => {
    if (!(await ironic.supports(DISABLE_POWER_OFF_MICROVERSION))) ctx.skip();
    const node = await ironic.createNode({ name: `errors-poweroff-${randomUUID().slice(0, 8)}`, driver: 'fake-hardware' });
    try {
      await ironic.setDisablePowerOff(node.uuid, true);
      const { changeNodePower } = createPowerActivities({ ironic, bmc: { getBmcPower: async () => ({ poweredOn: false, state: 'off' }) } });
      const sent = proxy.requests.length;
      const f = await failureOf(changeNodePower({ ref: { namespace: 'errors', name: 'h' }, nodeId: node.uuid, action: 'off', mode: 'soft', softTimeoutSeconds: 5 }));
      // Before: a 409 other than a locked node was read again and again until the attempt's timeout, then retried.
      expect(f).toMatchObject({ type: FAILURE.ironicRejected, nonRetryable: true });
      expect(f.message).toMatch(/HTTP 409: Failed to set node power state to soft power off\. \(the node's disable_power_off is set/);
      expect(proxy.requests.slice(sent).filter((r) => isPowerChange(r) && reachedPeer(r)).map((r) => (JSON.parse(r.body) as { target: string }).target)).toEqual(['soft power off']);
    } finally {
      await ironic.deleteNode(node.uuid);
    }
  });

  it('an Ironic that refuses the API version (406) is IronicTooOld in the power activities too, not IronicRejected', async () => {
    const id = randomUUID();
    proxy.fail((r) => r.path.startsWith(`/v1/nodes/${id}`), 1, 406, 'Version 1.81 was requested but the maximum version supported by this service is 1.46.');
    const { readHostPower } = createPowerActivities({ ironic, bmc: { getBmcPower: async () => ({ poweredOn: false, state: 'off' }) } });
    const f = await failureOf(readHostPower({ ref: { namespace: 'errors', name: 'h' }, spec: { online: true } as never, nodeId: id, via: 'ironic' }));
    expect(f).toMatchObject({ type: FAILURE.ironicTooOld, nonRetryable: true });
  });
});
