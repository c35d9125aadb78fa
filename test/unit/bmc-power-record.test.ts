/**
 * What a setBmcPower attempt takes over from the one before (activities/bmc/activities.ts): the record of an attempt
 * that ended with its last word (a failure carries its heartbeat details), or, from one that left none (its worker
 * was killed), an unknown request that the BMC is given its time to show before anything is sent.
 */
import { describe, expect, it } from 'vitest';
import { carriedPowerRecord } from '../../activities/bmc/activities';

describe("a BMC power attempt's record, as its retry takes it over", () => {
  it('the first attempt starts from nothing', () => {
    expect(carriedPowerRecord(undefined)).toEqual({ sent: [] });
    expect(carriedPowerRecord({ attempt: 1 })).toEqual({ sent: [] });
  });

  it("an attempt that ended with its last word hands over what it sent and what got no answer (on the retry's clock at most)", () => {
    expect(carriedPowerRecord({ attempt: 2, heartbeatDetails: { attempt: 1, sent: ['soft-off'], ended: true } }, 10_000)).toEqual({ sent: ['soft-off'] });
    expect(carriedPowerRecord({ attempt: 3, heartbeatDetails: { attempt: 2, sent: ['on'], unanswered: { target: 'on', at: 4_000 }, ended: true } }, 10_000)).toEqual({
      sent: ['on'],
      unanswered: { target: 'on', at: 4_000 },
    });
    expect(carriedPowerRecord({ attempt: 2, heartbeatDetails: { attempt: 1, sent: ['on'], unanswered: { target: 'on', at: 99_000 }, ended: true } }, 10_000).unanswered).toEqual({ target: 'on', at: 10_000 });
  });

  it('an attempt that left no last word (killed: no record, an older one, or one without `ended`) may have sent anything: unknown from now', () => {
    expect(carriedPowerRecord({ attempt: 2 }, 10_000)).toEqual({ sent: [], unanswered: { at: 10_000 } });
    expect(carriedPowerRecord({ attempt: 2, heartbeatDetails: { attempt: 1, sent: [] } }, 10_000)).toEqual({ sent: [], unanswered: { at: 10_000 } });
    // Attempt 2 left nothing: attempt 1's last word says nothing of what attempt 2 sent.
    expect(carriedPowerRecord({ attempt: 3, heartbeatDetails: { attempt: 1, sent: ['off'], ended: true } }, 10_000)).toEqual({ sent: ['off'], unanswered: { at: 10_000 } });
    // Details of an older version's attempt ({ state }): no record.
    expect(carriedPowerRecord({ attempt: 2, heartbeatDetails: { state: 'on' } }, 10_000)).toEqual({ sent: [], unanswered: { at: 10_000 } });
    expect(carriedPowerRecord({ attempt: 2, heartbeatDetails: { attempt: 1, sent: ['reboot', 'on'], ended: true } }, 10_000)).toEqual({ sent: ['on'] });
  });
});
