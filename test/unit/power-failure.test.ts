/**
 * Whether a power change failed, told apart from an error the node held
 * before it was sent (activities/ironic/power-failure.ts): a node in a failed
 * provision state keeps its failure in last_error through power changes, for
 * good when Ironic's node history is off. The stack test is
 * test/integration/node-history-off.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { IronicNode } from '../../clients/ironic/types';
import { powerBefore, powerChangeFailure, powerTargetOf, readPowerBefore } from '../../activities/ironic/power-failure';

const node = (over: Partial<IronicNode>, changedAt?: string): IronicNode =>
  ({ uuid: 'n1', provision_state: 'inspect failed', power_state: 'power off', target_power_state: null, last_error: null, ...(changedAt ? { driver_internal_info: { last_power_state_change: changedAt } } : {}), ...over }) as IronicNode;

const OLD = 'Inspection was aborted by request.';
const ON_FAILED = "Failed to change power state to 'power on' by 'power on': the BMC did not answer";

describe('powerChangeFailure', () => {
  it('does not take an error the node held before the change for the change’s', () => {
    const before = powerBefore(node({ last_error: OLD }, 't0'));
    expect(powerChangeFailure(node({ last_error: OLD }, 't0'), 'power on', before)).toBeUndefined();
    // The change ran (Ironic stamped it) and ended without a new error: nothing says it failed.
    expect(powerChangeFailure(node({ last_error: OLD }, 't1'), 'power on', before)).toBeUndefined();
    // Without a record of before (lost with a worker): only Ironic's own words for a failed power change count.
    expect(powerChangeFailure(node({ last_error: OLD }), 'power on', undefined)).toBeUndefined();
  });

  it('reports a power change Ironic failed, even in words the node held before', () => {
    expect(powerChangeFailure(node({ last_error: ON_FAILED }, 't1'), 'power on', powerBefore(node({ last_error: OLD }, 't0')))).toBe(ON_FAILED);
    expect(powerChangeFailure(node({ last_error: ON_FAILED }), 'power on', undefined)).toBe(ON_FAILED);
    // The same failure again (same words), told by Ironic's stamp of a new power change.
    expect(powerChangeFailure(node({ last_error: ON_FAILED }, 't1'), 'power on', powerBefore(node({ last_error: ON_FAILED }, 't0')))).toBe(ON_FAILED);
    expect(powerChangeFailure(node({ last_error: ON_FAILED }, 't0'), 'power on', powerBefore(node({ last_error: ON_FAILED }, 't0')))).toBeUndefined();
    // A new error in other words after a power change started (a translated Ironic) is the change's.
    expect(powerChangeFailure(node({ last_error: 'Échec' }, 't1'), 'power on', powerBefore(node({ last_error: null }, 't0')))).toBe('Échec');
  });

  it('says nothing while Ironic is still at it, and reads reboots and soft targets as their end state', () => {
    expect(powerChangeFailure(node({ last_error: ON_FAILED, target_power_state: 'power on' }), 'power on', undefined)).toBeUndefined();
    expect(powerChangeFailure(node({ last_error: ON_FAILED }), 'power off', undefined)).toBeUndefined();
    expect(['power on', 'rebooting', 'soft rebooting'].map(powerTargetOf)).toEqual(['power on', 'power on', 'power on']);
    expect(['power off', 'soft power off'].map(powerTargetOf)).toEqual(['power off', 'power off']);
  });

  it('reads its record back from heartbeat details, and nothing malformed', () => {
    expect(readPowerBefore({ lastError: OLD, changedAt: null })).toEqual({ lastError: OLD, changedAt: null });
    expect(readPowerBefore({ lastError: 3, changedAt: null })).toBeUndefined();
    expect(readPowerBefore(undefined)).toBeUndefined();
  });
});
