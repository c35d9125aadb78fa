/**
 * The controller's informer on the real kube-apiserver: a metadata-only list
 * of an empty namespace's Secrets answers `"items": null` (a
 * PartialObjectMetadataList with no item), and the controller must still
 * start. The chaos suite found it: a controller watching a fresh namespace
 * retried that list for ever and never drove a host.
 */
import { describe, expect, it } from 'vitest';
import { Informer, type KubeObject } from '../../k8s/controller/informer';
import { uniq, waitFor } from '../support/harness';
import { kubectl } from './kube-harness';
import { useKubeRest } from './kube-rest-suite';
import { secretDoc } from './manifests';

const NS = uniq('mf-informer');
const kube = useKubeRest(NS);

describe('the informer', () => {
  it('syncs the Secrets of a namespace that has none, metadata only, and then sees one created', async () => {
    const logged: string[] = [];
    const changed: string[] = [];
    const informer = new Informer<KubeObject>(kube.rest, `/api/v1/namespaces/${NS}/secrets`, (key) => changed.push(key), {
      metadataOnly: true,
      log: (m) => logged.push(m),
    });
    let synced = false;
    void informer.start().then(() => (synced = true));
    try {
      await waitFor('the first list to sync', async () => synced, { timeoutMs: 30_000 });
      expect(informer.cache.size).toBe(0);
      expect(logged.filter((m) => m.includes('failed'))).toEqual([]);
      kubectl(['apply', '-n', NS, '-f', '-'], { input: JSON.stringify(secretDoc('late', { password: 'x' })) });
      await waitFor('the watch to report the new Secret', async () => changed.includes(`${NS}/late`), { timeoutMs: 30_000 });
    } finally {
      informer.stop();
    }
  });
});
