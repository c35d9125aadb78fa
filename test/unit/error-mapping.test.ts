/**
 * Each peer's errors in the closed set the workflows branch on
 * (model/failures.ts), without a stack: the per-peer mappings next to each
 * client's error type, and the activity layer's one conversion to a Temporal
 * failure (activities/common/failures.ts). Redfish error bodies are built from the
 * DMTF Base message registry shipped with the DMTF mockup (the MessageIds and
 * texts real BMCs send); ipmitool output is the tool's own wording; Ironic's
 * 404 is its real body.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { FAILURE, NON_RETRYABLE_FAILURES } from '../../model/failures';
import { failureClassOf, toFailure } from '../../activities/common/failures';
import { IronicError, ironicFailureClass, ironicErrorMessage, missingNodeOf } from '../../clients/ironic/errors';
import { bmcFailureClass, IpmiError, RedfishError, type BmcErrorKind } from '../../clients/bmc/errors';
import { httpError, parseJson, type RedfishResponse } from '../../clients/redfish/http';
import { classifyIpmitoolFailure } from '../../clients/ipmi/ipmitool';
import { ImageError, imageFailureClass, statusError } from '../../clients/images/errors';
import { KubeError, kubeErrorKind, kubeFailureClass } from '../../clients/kubernetes/kube-error';
import { MOCKUP_ROOT } from '../bmc/support/redfish-mockup';
import { MockActivityEnvironment } from '@temporalio/testing';
import { activityFailureMapping } from '../../workers/activity-failures';
import { createLimiterActivities } from '../../activities/limiter/activities';

const registry = JSON.parse(readFileSync(join(MOCKUP_ROOT, 'Registries', 'Base.1.5.0.json'), 'utf8')) as {
  Messages: Record<string, { Message: string; Severity: string; Resolution: string }>;
};

/** A Redfish error body as a BMC sends it: `error` with the registry's message for `id`, its arguments filled in. */
function redfishErrorBody(status: number, id: string, args: string[] = []): RedfishResponse {
  const entry = registry.Messages[id];
  if (!entry) throw new Error(`no message ${id} in the DMTF Base registry`);
  const message = args.reduce((m, a, i) => m.replace(`%${i + 1}`, a), entry.Message);
  const body = {
    error: {
      code: `Base.1.5.0.${id}`,
      message,
      '@Message.ExtendedInfo': [{ MessageId: `Base.1.5.0.${id}`, Message: message, MessageArgs: args, Severity: entry.Severity, Resolution: entry.Resolution }],
    },
  };
  const text = JSON.stringify(body);
  return { status, headers: {}, body: parseJson(text), text };
}

const redfish = (res: RedfishResponse) => bmcFailureClass(httpError('POST', 'https://bmc/redfish/v1/Systems/1/Actions/ComputerSystem.Reset', res, 'admin'));

describe('Redfish: HTTP answers with real Redfish error bodies', () => {
  it('a refused parameter value or unsupported action is final (OperationFailed, kind unsupported)', () => {
    const notInList = redfishErrorBody(400, 'PropertyValueNotInList', ['Bogus', 'ResetType']);
    expect(redfish(notInList)).toEqual({ type: FAILURE.operationFailed, retryable: false, details: { kind: 'unsupported' } });
    expect(redfish(redfishErrorBody(400, 'ActionParameterNotSupported', ['ResetType', 'Reset']))).toMatchObject({ details: { kind: 'unsupported' }, retryable: false });
  });

  it('401/403 are final bad credentials; 404 is a final not-found', () => {
    expect(redfish(redfishErrorBody(403, 'InsufficientPrivilege'))).toEqual({ type: FAILURE.operationFailed, retryable: false, details: { kind: 'bad-credentials' } });
    expect(redfish(redfishErrorBody(404, 'ResourceMissingAtURI', ['/redfish/v1/Systems/2']))).toEqual({
      type: FAILURE.operationFailed,
      retryable: false,
      details: { kind: 'not-found' },
    });
  });

  it('5xx may pass: Transient, retried', () => {
    expect(redfish(redfishErrorBody(500, 'InternalError'))).toEqual({ type: FAILURE.transient, retryable: true, details: { kind: 'bmc-fault' } });
    expect(redfish(redfishErrorBody(503, 'ServiceTemporarilyUnavailable', ['30']))).toMatchObject({ type: FAILURE.transient, retryable: true });
  });

  it('the message carries the BMC\'s own words', () => {
    const err = httpError('POST', 'https://bmc/x', redfishErrorBody(400, 'PropertyValueNotInList', ['Bogus', 'ResetType']), 'admin');
    expect(err.message).toContain('The value Bogus for the property ResetType is not in the list of acceptable values.');
  });
});

describe('BMC kinds (Redfish and IPMI alike)', () => {
  const cases: [BmcErrorKind, string, boolean][] = [
    ['unreachable', FAILURE.transient, true],
    ['bmc-fault', FAILURE.transient, true],
    ['timeout', FAILURE.transient, true],
    ['bad-credentials', FAILURE.operationFailed, false],
    ['tls', FAILURE.operationFailed, false],
    ['not-found', FAILURE.operationFailed, false],
    ['unsupported', FAILURE.operationFailed, false],
    ['rejected', FAILURE.operationFailed, false],
    ['task-failed', FAILURE.operationFailed, false],
    ['bad-answer', FAILURE.internal, false],
  ];
  it.each(cases)('%s is %s (retried: %s)', (kind, type, retryable) => {
    expect(bmcFailureClass(new RedfishError(kind, 'x'))).toEqual({ type, retryable, details: { kind } });
    expect(bmcFailureClass(new IpmiError(kind, 'x'))).toEqual({ type, retryable, details: { kind } });
  });
});

describe('IPMI: ipmitool output', () => {
  const ipmi = (out: string) => bmcFailureClass(classifyIpmitoolFailure(out, '10.0.0.5:623', 'chassis power status', 'hunter2'));
  it('a wrong password or user is final; no answer is retried; an unsupported cipher suite is final', () => {
    expect(ipmi('Error: Unable to establish IPMI v2 / RMCP+ session\nRAKP 2 HMAC is invalid')).toMatchObject({ type: FAILURE.operationFailed, retryable: false, details: { kind: 'bad-credentials' } });
    expect(ipmi('> RAKP 2 message indicates an error : unauthorized name\nError: Unable to establish IPMI v2 / RMCP+ session')).toMatchObject({ details: { kind: 'bad-credentials' } });
    expect(ipmi('Error: Unable to establish IPMI v2 / RMCP+ session\nGet Auth Capabilities error')).toMatchObject({ type: FAILURE.transient, retryable: true, details: { kind: 'unreachable' } });
    expect(ipmi('Error in open session response message : no matching cipher suite\nError: Unable to establish IPMI v2 / RMCP+ session')).toMatchObject({
      type: FAILURE.operationFailed,
      details: { kind: 'unsupported' },
    });
  });
});

describe('images', () => {
  const url = 'https://images.example/os/disk.qcow2?X-Amz-Signature=s3cr3t';
  it('404/410 and 4xx are final (ImageUnusable with the type); 5xx and 429 are retried as unavailable, not "unreachable"', () => {
    expect(imageFailureClass(statusError('the image', url, 404))).toEqual({ type: FAILURE.imageUnusable, retryable: false, details: { type: 'not-found' } });
    expect(imageFailureClass(statusError('the image', url, 403))).toEqual({ type: FAILURE.imageUnusable, retryable: false, details: { type: 'http-error' } });
    expect(imageFailureClass(statusError('the image', url, 500))).toEqual({ type: FAILURE.transient, retryable: true, details: { type: 'unavailable' } });
    expect(imageFailureClass(statusError('the image', url, 429))).toMatchObject({ retryable: true, details: { type: 'unavailable' } });
    expect(statusError('the image', url, 500).message).not.toContain('s3cr3t');
    expect(imageFailureClass(new ImageError('html-page', 'x'))).toMatchObject({ type: FAILURE.imageUnusable, retryable: false });
  });
});

describe('Kubernetes: one reading of an API server status', () => {
  it('404, 409, 429, other 4xx and 5xx', () => {
    expect([404, 409, 429, 400, 401, 403, 410, 422, 500, 503].map(kubeErrorKind)).toEqual([
      'not-found',
      'conflict',
      'throttled',
      'rejected',
      'rejected',
      'rejected',
      'rejected',
      'rejected',
      'unavailable',
      'unavailable',
    ]);
  });
  it('a refusal is final KubernetesRejected; a conflict, throttling or a server error is retried', () => {
    const refused = new KubeError(422, 'PATCH …/status: 422 BareMetalHost.metal3.io "h" is invalid', 'Invalid');
    expect(kubeFailureClass(refused)).toEqual({ type: FAILURE.kubernetesRejected, retryable: false, details: { status: 422 } });
    expect(kubeFailureClass(new KubeError(409, 'conflict'))).toMatchObject({ type: FAILURE.transient, retryable: true });
    expect(kubeFailureClass(new KubeError(429, 'slow down'))).toMatchObject({ type: FAILURE.transient, retryable: true });
    expect(kubeFailureClass(new KubeError(503, 'unavailable'))).toMatchObject({ type: FAILURE.transient, retryable: true });
  });
});

describe('Ironic', () => {
  // Ironic's own 404 body for a node it does not have.
  const body = JSON.stringify({ error_message: JSON.stringify({ faultcode: 'Client', faultstring: 'Node 0d3b5a1e-1a1b-4c55-9f7e-7f1f2b6d3c11 could not be found.', debuginfo: null }) });
  it('a 404 on the node itself is IronicNodeGone naming the node; a 404 elsewhere is retried', () => {
    const message = ironicErrorMessage(body);
    const missing = missingNodeOf('/v1/nodes/0d3b5a1e-1a1b-4c55-9f7e-7f1f2b6d3c11/states/provision', message);
    expect(missing).toBe('0d3b5a1e-1a1b-4c55-9f7e-7f1f2b6d3c11');
    expect(ironicFailureClass(new IronicError('not-found', message, 404, missing))).toMatchObject({ type: FAILURE.nodeGone, retryable: false, details: { nodeId: missing } });
    expect(ironicFailureClass(new IronicError('not-found', 'Driver x could not be found', 404))).toEqual({ type: FAILURE.transient, retryable: true });
  });
  it('too-old is IronicTooOld, rejected IronicRejected, a non-JSON success internal; busy, locked and TLS are retried', () => {
    expect(ironicFailureClass(new IronicError('too-old', 'x', 406))).toEqual({ type: FAILURE.ironicTooOld, retryable: false });
    expect(ironicFailureClass(new IronicError('rejected', 'x', 400))).toEqual({ type: FAILURE.ironicRejected, retryable: false });
    expect(ironicFailureClass(new IronicError('bad-answer', 'x', 200))).toEqual({ type: FAILURE.internal, retryable: false });
    for (const kind of ['conflict', 'busy', 'timed-out', 'unavailable', 'tls'] as const) expect(ironicFailureClass(new IronicError(kind, 'x'))).toEqual({ type: FAILURE.transient, retryable: true });
  });
});

describe('the activity layer: one conversion to a Temporal failure', () => {
  it('programming errors are final InternalErrors, not transient', () => {
    for (const bug of [new TypeError("Cannot read properties of undefined (reading 'url')"), new RangeError('Invalid time value'), new SyntaxError('Unexpected token < in JSON')]) {
      const f = toFailure(bug) as ApplicationFailure;
      expect(f).toBeInstanceOf(ApplicationFailure);
      expect(f).toMatchObject({ type: FAILURE.internal, nonRetryable: true });
      expect(f.message).toBe(`internal error in metalflow: ${bug.name}: ${bug.message}`);
    }
  });
  it('a typed client error keeps its message and details; a non-retryable type is in the retry policies\' list', () => {
    const f = toFailure(new RedfishError('bad-credentials', 'the BMC rejected the credentials of user "admin"', 401)) as ApplicationFailure;
    expect(f).toMatchObject({ type: FAILURE.operationFailed, nonRetryable: true, details: [{ kind: 'bad-credentials' }], message: 'the BMC rejected the credentials of user "admin"' });
    for (const err of [new IronicError('too-old', 'x'), new KubeError(403, 'x'), new RedfishError('bad-answer', 'x'), new TypeError('x')]) {
      expect(NON_RETRYABLE_FAILURES).toContain((toFailure(err) as ApplicationFailure).type);
    }
  });
  it("Temporal's own failures pass as they are; an unknown error is retried as Transient", () => {
    const cancelled = new CancelledFailure('cancelled');
    expect(toFailure(cancelled)).toBe(cancelled);
    const own = ApplicationFailure.nonRetryable('x', 'PivotTargetConflict');
    expect(toFailure(own)).toBe(own);
    expect(failureClassOf(new Error('socket hang up'))).toEqual({ type: FAILURE.transient, retryable: true, message: 'socket hang up' });
  });
});

describe("the worker's activity interceptor", () => {
  it('gives an activity without a mapping of its own the same conversion: a bug is a final InternalError, with its own stack', async () => {
    const { closedPermitHolders } = createLimiterActivities({ limit: 1 });
    const broken = () => closedPermitHolders(null as unknown as []);
    const bare = await new MockActivityEnvironment().run(broken).then(() => undefined, (e: unknown) => e);
    expect(bare).toBeInstanceOf(TypeError);
    const mapped = await new MockActivityEnvironment(undefined, { interceptors: [activityFailureMapping] }).run(broken).then(() => undefined, (e: unknown) => e);
    expect(mapped).toBeInstanceOf(ApplicationFailure);
    expect(mapped).toMatchObject({ type: FAILURE.internal, nonRetryable: true });
    expect((mapped as Error).stack).toContain('limiter/activities');
  });
});
