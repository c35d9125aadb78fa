/**
 * The tests' in-process `kubectl get … -o json` (kube-get.ts) against kubectl itself, on the real API server:
 * the same JSON for an object, a cluster-scoped Node, one object's Events, a namespace's objects (all, and by
 * label), and a failure for a missing object.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { uniq } from '../support/harness';
import { getInProcess } from './kube-get';
import { KUBECONFIG, kubectl, kubePaths } from './kube-harness';
import { useKubeRest } from './kube-rest-suite';
import { secretDoc } from './manifests';

const NS = uniq('mf-kget');
useKubeRest(NS);

/** kubectl's own answer (a process), not the harness's. */
function byKubectl(args: string[]): { status: number; json?: unknown } {
  const r = spawnSync(kubePaths().kubectl, ['--kubeconfig', KUBECONFIG, ...args], { encoding: 'utf8' });
  return { status: r.status ?? -1, json: r.status === 0 ? JSON.parse(r.stdout) : undefined };
}
function inProcess(args: string[]): { status: number; json?: unknown } {
  const r = getInProcess(args, KUBECONFIG);
  if (!r) throw new Error(`not answered in process: ${args.join(' ')}`);
  return { status: r.status, json: r.status === 0 ? JSON.parse(r.stdout) : undefined };
}

describe('kubectl get -o json, answered in process', () => {
  it('answers as kubectl does for an object, a Node, Events by field selector, lists and a missing object', () => {
    kubectl(['apply', '-n', NS, '-f', '-'], { input: JSON.stringify(secretDoc('s-1', { password: 'x' })) });
    kubectl(['apply', '-n', NS, '-f', '-'], { input: JSON.stringify({ ...secretDoc('s-2', { password: 'y' }), metadata: { name: 's-2', labels: { kget: 'yes' } } }) });
    const node = uniq('kget-node');
    kubectl(['create', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name: node, labels: { a: 'b' } } }) });
    kubectl(['create', '-n', NS, '-f', '-'], {
      input: JSON.stringify({ apiVersion: 'v1', kind: 'Event', metadata: { name: 'e-1' }, involvedObject: { kind: 'Secret', name: 's-1', namespace: NS }, reason: 'Tested', message: 'm', type: 'Normal' }),
    });
    try {
      for (const args of [
        ['get', 'secret', 's-1', '-n', NS, '-o', 'json'],
        ['get', 'node', node, '-o', 'json'],
        ['get', 'events', '-n', NS, '--field-selector', 'involvedObject.name=s-1', '-o', 'json'],
        ['get', 'events', '-n', NS, '--field-selector', 'involvedObject.name=nothing', '-o', 'json'],
        ['get', 'secrets', '-n', NS, '-o', 'json'],
        ['get', 'secrets', '-n', NS, '-l', 'kget=yes', '-o', 'json'],
      ]) {
        const want = byKubectl(args);
        expect(want.status, args.join(' ')).toBe(0);
        expect(inProcess(args), args.join(' ')).toEqual(want);
      }
      const missing = ['get', 'bmh', 'missing', '-n', NS, '-o', 'json'];
      expect(byKubectl(missing).status).not.toBe(0);
      expect(inProcess(missing).status).not.toBe(0);
    } finally {
      kubectl(['delete', 'node', node, '--wait=false'], { check: false });
      kubectl(['delete', 'namespace', NS, '--wait=false'], { check: false });
    }
  });
});
