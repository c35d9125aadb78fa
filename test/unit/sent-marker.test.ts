/**
 * A sent marker that announces the verb its activity sends next (activities/ironic/sent-marker.ts): when a later
 * attempt takes that verb as sent. Pure: the node as read and the marker on it.
 */
import { describe, expect, it } from 'vitest';
import type { IronicNode } from '../../clients/ironic/types';
import { announcedVerbSent, ownMarker, provisionMoment, SENT_MARKER, type SentMarker } from '../../activities/ironic/sent-marker';

const node = (over: Partial<IronicNode>): IronicNode => ({ uuid: 'n1', provision_state: 'manageable', provision_updated_at: '2026-12-04T04:00:00', last_error: null, extra: {}, ...over }) as IronicNode;

describe("a provide's marker announcing the deploy (then: active)", () => {
  const marker: SentMarker = { key: 'wf#7', verb: 'provide', before: provisionMoment(node({})), then: 'active' };
  const later = (provision_state: string) => node({ provision_state, provision_updated_at: '2026-12-04T04:00:09' });

  it('the deploy was sent once the node is where only a deploy leads, since the marker', () => {
    for (const state of ['deploying', 'wait call-back', 'deploy failed', 'active']) expect(announcedVerbSent(later(state), marker)).toBe(true);
  });

  it('not while the node is where the provide left it, cleaning, or not moved at all', () => {
    for (const state of ['available', 'cleaning', 'clean wait', 'clean failed', 'manageable']) expect(announcedVerbSent(later(state), marker)).toBe(false);
    expect(announcedVerbSent(node({}), marker)).toBe(false);
    expect(announcedVerbSent(later('active'), { ...marker, then: undefined })).toBe(false);
  });

  it('a marker whose `then` this version does not know is read without it (its next verb is marked on its own)', () => {
    const unknown = node({ extra: { [SENT_MARKER]: { ...marker, then: 'rescue' } } });
    expect(ownMarker(unknown, 'wf#7')).toEqual({ key: 'wf#7', verb: 'provide', before: marker.before });
    expect(ownMarker(node({ extra: { [SENT_MARKER]: marker } }), 'wf#7')).toEqual(marker);
    expect(ownMarker(node({ extra: { [SENT_MARKER]: marker } }), 'wf#8')).toBeUndefined();
  });
});
