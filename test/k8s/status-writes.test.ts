/**
 * The worker's status write on the real kube-apiserver: a write by another
 * writer between its read and its write (the controller's node health
 * conditions) is read again, not overwritten, and a publish retried after it
 * wrote sends its Events once.
 */
import { describe, expect, it } from 'vitest';
import { createKubernetesActivities } from '../../activities/host-status-activities';
import type { KubeRest } from '../../clients/kubernetes/kube-rest';
import { emptyStatus } from '../../types/host';
import { uniq } from '../support/harness';
import { kubectl } from './kube-harness';
import { useKubeRest } from './kube-rest-suite';
import { hostDoc } from './manifests';

const NS = uniq('mf-status');
const kube = useKubeRest(NS);
const path = (name: string) => `/apis/metal3.io/v1alpha1/namespaces/${NS}/baremetalhosts/${name}`;
// Paused: no controller runs in this file, and none would start a workflow for it anyway.
const pausedHost = (name: string) => kubectl(['apply', '-n', NS, '-f', '-'], { input: JSON.stringify(hostDoc(name, { online: true }, { 'baremetalhost.metal3.io/paused': 'status test' })) });
interface Condition { type: string; status: string; reason: string }

describe("the worker's status write", () => {
  it("keeps a condition another writer set between the worker's read and its write", async () => {
    const name = uniq('race');
    kubectl(['apply', '-f', 'k8s/crds']);
    pausedHost(name);
    let raced = false;
    // The real API server throughout; the other writer's write lands right after the worker's first read.
    const rest = new Proxy(kube.rest, {
      get(target, prop, receiver) {
        if (prop !== 'call') return Reflect.get(target, prop, receiver) as unknown;
        return async (...args: Parameters<KubeRest['call']>) => {
          const result: unknown = await target.call(...args);
          if (!raced && args[0] === 'GET' && args[1] === path(name)) {
            raced = true;
            await target.call('PATCH', `${path(name)}/status`, {
              body: { status: { ...emptyStatus(), conditions: [{ type: 'Healthy', status: 'False', reason: 'Warning', message: 'from the controller', lastTransitionTime: '2026-12-01T00:00:00Z' }] } },
              contentType: 'application/merge-patch+json',
            });
          }
          return result;
        };
      },
    });
    const activities = createKubernetesActivities({ rest });
    expect(await activities.publishHostStatus({ ref: { namespace: NS, name }, status: { ...emptyStatus(), provisioning: { state: 'registering', ID: '' } } })).toEqual({ published: true });
    expect(raced).toBe(true);
    const status = (await kube.rest.call<{ status: { conditions: Condition[]; provisioning: { state: string } } }>('GET', path(name))).status;
    expect(status.provisioning.state).toBe('registering');
    expect(status.conditions.find((c) => c.type === 'Healthy')).toMatchObject({ status: 'False', reason: 'Warning' });
  });

  it('sends the Events of a publish once when the publish is retried', async () => {
    const name = uniq('events');
    pausedHost(name);
    const activities = createKubernetesActivities({ rest: kube.rest });
    const input = {
      ref: { namespace: NS, name },
      status: { ...emptyStatus(), lastUpdated: '2026-12-01T10:00:00Z', provisioning: { state: 'inspecting' as const, ID: 'n' } },
      event: { type: 'Normal' as const, reason: 'StateChanged', message: 'registering -> inspecting' },
    };
    await activities.publishHostStatus(input);
    // A retry of the same activity: its first attempt wrote, then failed before it could say so.
    await activities.publishHostStatus(input);
    const events = JSON.parse(kubectl(['get', 'events', '-n', NS, '--field-selector', `involvedObject.name=${name}`, '-o', 'json']).stdout) as { items: { reason: string }[] };
    expect(events.items.filter((e) => e.reason === 'StateChanged')).toHaveLength(1);
  });
});
