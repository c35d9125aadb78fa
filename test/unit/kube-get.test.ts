/** Which `kubectl get` calls the Kubernetes tests answer in their own process (test/k8s/kube-get.ts), and which stay kubectl's. */
import { describe, expect, it } from 'vitest';
import { parseGet } from '../k8s/kube-get';

describe('parseGet', () => {
  it('takes one object as JSON, its flags in any order', () => {
    expect(parseGet(['get', 'bmh', 'h-1', '-n', 'ns', '-o', 'json'])).toEqual({ resource: 'bmh', name: 'h-1', namespace: 'ns', fieldSelector: undefined, labelSelector: undefined });
    expect(parseGet(['get', '-n', 'ns', 'hostremediation', 'r', '-o', 'json'])).toMatchObject({ resource: 'hostremediation', name: 'r', namespace: 'ns' });
    expect(parseGet(['get', 'node', 'n-1', '-o', 'json'])).toMatchObject({ resource: 'node', name: 'n-1', namespace: undefined });
  });

  it("takes a namespace's objects, and those a field or label selector picks", () => {
    expect(parseGet(['get', 'events', '-n', 'ns', '--field-selector', 'involvedObject.name=h', '-o', 'json'])).toEqual({
      resource: 'events',
      name: undefined,
      namespace: 'ns',
      fieldSelector: 'involvedObject.name=h',
      labelSelector: undefined,
    });
    expect(parseGet(['get', 'bmh', '-n', 'ns', '-o', 'json'])).toMatchObject({ resource: 'bmh', name: undefined, namespace: 'ns' });
    expect(parseGet(['get', 'hostremediations', '-n', 'ns', '-l', 'a=b', '-o', 'json'])).toMatchObject({ resource: 'hostremediations', labelSelector: 'a=b' });
  });

  it('leaves everything else to kubectl', () => {
    for (const args of [
      ['get', 'bmh', 'h-1', '-n', 'ns'], // a table
      ['get', 'bmh', 'h-1', '-n', 'ns', '-o', 'jsonpath={.status}'],
      ['get', 'bmh', 'a', 'b', '-n', 'ns', '-o', 'json'],
      ['get', 'configmap', 'c', '-n', 'ns', '-o', 'json'], // a resource it does not know
      ['get', 'bmh', 'h-1', '-n', 'ns', '-o', 'json', '--watch'],
      ['get', 'bmh', 'h-1', '-n', 'ns', '--field-selector', 'x=y', '-o', 'json'], // a selector on one object
      ['get', 'bmh', '-A', '-o', 'json'],
      ['apply', '-n', 'ns', '-f', '-'],
    ]) {
      expect(parseGet(args), args.join(' ')).toBeUndefined();
    }
  });
});
