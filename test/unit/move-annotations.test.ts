/** clusterctl move compatibility (model/clusterctl-move.ts): which annotations the controller changes, and when. */
import { describe, expect, it } from 'vitest';
import { BLOCK_MOVE, CAPM3_PAUSE, STATUS_ANNOTATION, moveAnnotations } from '../../model/clusterctl-move';

const status = (state: string) => ({ operationalStatus: 'OK' as const, poweredOn: true, provisioning: { state, ID: 'node-1' } });
const host = (state: string, annotations: Record<string, string> = {}) => ({ metadata: { annotations }, status: status(state) as never });

describe('moveAnnotations', () => {
  it('blocks a move while the host is busy, and lifts its own block once at rest', () => {
    expect(moveAnnotations(host('provisioning'), undefined)).toEqual({ [BLOCK_MOVE]: 'host is provisioning' });
    expect(moveAnnotations(host('provisioning', { [BLOCK_MOVE]: 'host is provisioning' }), undefined)).toBeUndefined();
    expect(moveAnnotations(host('provisioned', { [BLOCK_MOVE]: 'host is provisioning' }), undefined)).toEqual({ [BLOCK_MOVE]: null });
    expect(moveAnnotations(host('provisioned'), undefined)).toBeUndefined();
  });

  it("never lifts a block-move someone else set", () => {
    expect(moveAnnotations(host('provisioned', { [BLOCK_MOVE]: 'capm3: waiting for node' }), undefined)).toBeUndefined();
  });

  it("writes the status annotation (the object's .status as JSON) when paused for a move by CAPM3 or a pivot, not for a user's pause", () => {
    const h = host('provisioned');
    expect(moveAnnotations(h, CAPM3_PAUSE)).toEqual({ [STATUS_ANNOTATION]: JSON.stringify(h.status) });
    expect(moveAnnotations(h, 'metalflow.io/pivot-p1')).toEqual({ [STATUS_ANNOTATION]: JSON.stringify(h.status) });
    expect(moveAnnotations(host('provisioned', { [STATUS_ANNOTATION]: JSON.stringify(h.status) }), CAPM3_PAUSE)).toBeUndefined();
    expect(moveAnnotations(h, 'maintenance by alice')).toBeUndefined();
    // A paused host is at rest (its running operation was cancelled): a block it set is lifted.
    expect(moveAnnotations(host('provisioning', { [BLOCK_MOVE]: 'host is provisioning' }), 'maintenance by alice')).toEqual({ [BLOCK_MOVE]: null });
  });
});
