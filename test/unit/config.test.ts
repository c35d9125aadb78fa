/** Worker capacity from the environment: accepted values pass through, bad ones name the variable. */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../config/env';

describe('worker tuning from the environment', () => {
  it('leaves the SDK defaults alone when nothing is set', () => {
    expect(loadConfig({}).workerTuning).toEqual({});
  });

  it('reads every knob', () => {
    const t = loadConfig({
      METALFLOW_WORKER_MAX_CACHED_WORKFLOWS: '0',
      METALFLOW_WORKER_WORKFLOW_TASKS: '80',
      METALFLOW_WORKER_ACTIVITY_TASKS: '200',
      METALFLOW_WORKER_WORKFLOW_POLLERS: '30',
      METALFLOW_WORKER_ACTIVITY_POLLERS: '4',
      METALFLOW_WORKER_NONSTICKY_POLL_RATIO: '0.25',
    }).workerTuning;
    expect(t).toEqual({
      maxCachedWorkflows: 0,
      maxConcurrentWorkflowTaskExecutions: 80,
      maxConcurrentActivityTaskExecutions: 200,
      maxConcurrentWorkflowTaskPolls: 30,
      maxConcurrentActivityTaskPolls: 4,
      nonStickyToStickyPollRatio: 0.25,
    });
  });

  it.each([
    ['METALFLOW_WORKER_WORKFLOW_POLLERS', '1', /METALFLOW_WORKER_WORKFLOW_POLLERS must be an integer >= 2, got "1"/],
    ['METALFLOW_WORKER_WORKFLOW_TASKS', '0', /METALFLOW_WORKER_WORKFLOW_TASKS must be an integer >= 1/],
    ['METALFLOW_WORKER_MAX_CACHED_WORKFLOWS', 'lots', /METALFLOW_WORKER_MAX_CACHED_WORKFLOWS must be an integer >= 0, got "lots"/],
    ['METALFLOW_WORKER_NONSTICKY_POLL_RATIO', '1.5', /METALFLOW_WORKER_NONSTICKY_POLL_RATIO must be a number in \(0, 1\], got "1.5"/],
  ])('rejects %s=%s, naming the variable', (name, value, message) => {
    expect(() => loadConfig({ [name]: value })).toThrow(message);
  });
});

describe('host workflow options from the environment', () => {
  it('reads the power check interval and soft power off timeout, leaving unset ones to the workflow defaults', () => {
    expect(loadConfig({}).hostOptions).toEqual({});
    expect(loadConfig({ METALFLOW_POWER_CHECK_SECONDS: '0', METALFLOW_SOFT_POWER_OFF_SECONDS: '60' }).hostOptions).toEqual({
      powerCheckSeconds: 0,
      softPowerOffSeconds: 60,
    });
    expect(() => loadConfig({ METALFLOW_SOFT_POWER_OFF_SECONDS: '0' })).toThrow(/METALFLOW_SOFT_POWER_OFF_SECONDS must be whole seconds from 1 to 86400, got "0"/);
    expect(() => loadConfig({ METALFLOW_POWER_CHECK_SECONDS: '5m' })).toThrow(/METALFLOW_POWER_CHECK_SECONDS must be whole seconds from 0 to 86400, got "5m"/);
  });

  it('reads the continue-as-new threshold, refusing values outside 20..10240 events', () => {
    expect(loadConfig({ METALFLOW_MAX_HISTORY_EVENTS: '60' }).hostOptions).toEqual({ maxHistoryEvents: 60 });
    for (const bad of ['19', '10241', '4e3x', '100.5']) {
      expect(() => loadConfig({ METALFLOW_MAX_HISTORY_EVENTS: bad })).toThrow(
        `METALFLOW_MAX_HISTORY_EVENTS must be a whole number of events from 20 to 10240, got "${bad}"`,
      );
    }
  });

  it('reads how long an API change waits for Temporal: 60 s unless set, at least 1 s', () => {
    expect(loadConfig({}).apiUpdateTimeoutSeconds).toBe(60);
    expect(loadConfig({ METALFLOW_API_UPDATE_TIMEOUT_SECONDS: '5' }).apiUpdateTimeoutSeconds).toBe(5);
    for (const bad of ['0', '-1', '1.5', 'soon']) {
      expect(() => loadConfig({ METALFLOW_API_UPDATE_TIMEOUT_SECONDS: bad })).toThrow(
        `METALFLOW_API_UPDATE_TIMEOUT_SECONDS must be whole seconds from 1 to 86400, got "${bad}"`,
      );
    }
  });

  it('reads the controller settings, refusing a concurrency or timeout it could not use', () => {
    expect(loadConfig({}).controller).toEqual({ leaseNamespace: 'default', leaseSeconds: 15, concurrency: 16, reconcileTimeoutSeconds: 60, endedScanSeconds: 30 });
    expect(
      loadConfig({
        METALFLOW_WATCH_NAMESPACE: 'racks',
        METALFLOW_CONTROLLER_CONCURRENCY: '4',
        METALFLOW_CONTROLLER_RECONCILE_TIMEOUT_SECONDS: '5',
        METALFLOW_LEASE_SECONDS: '4',
      }).controller,
    ).toMatchObject({ watchNamespace: 'racks', concurrency: 4, reconcileTimeoutSeconds: 5, leaseSeconds: 4 });
    // Number('sixteen') would be NaN: a queue that never runs anything, with no error.
    for (const bad of ['0', 'sixteen', '2.5', '10001']) {
      expect(() => loadConfig({ METALFLOW_CONTROLLER_CONCURRENCY: bad })).toThrow(
        `METALFLOW_CONTROLLER_CONCURRENCY must be a whole number from 1 to 10000, got "${bad}"`,
      );
    }
    for (const bad of ['0', 'soon']) {
      expect(() => loadConfig({ METALFLOW_CONTROLLER_RECONCILE_TIMEOUT_SECONDS: bad })).toThrow(
        `METALFLOW_CONTROLLER_RECONCILE_TIMEOUT_SECONDS must be whole seconds from 1 to 86400, got "${bad}"`,
      );
    }
    expect(() => loadConfig({ METALFLOW_LEASE_SECONDS: '1' })).toThrow('METALFLOW_LEASE_SECONDS must be whole seconds from 2 to 86400, got "1"');
  });
});
