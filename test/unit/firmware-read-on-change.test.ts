/** When a BareMetalHost's change makes the controller read its firmware from Ironic at once (k8s/controller/firmware-settings.ts). */
import { describe, expect, it } from 'vitest';
import { readsOnHostChange } from '../../k8s/controller/firmware-settings';

describe('readsOnHostChange', () => {
  it('reads a host new to the controller, a new node on the way to a rest state, and every arrival at rest', () => {
    expect(readsOnHostChange(undefined, 'n1|registering|OK', false)).toBe(true);
    expect(readsOnHostChange('|registering|OK', 'n1|registering|OK', false)).toBe(true);
    expect(readsOnHostChange('n1|preparing|OK', 'n1|available|OK', true)).toBe(true);
    expect(readsOnHostChange('n1|provisioning|OK', 'n1|provisioned|OK', true)).toBe(true);
    expect(readsOnHostChange('n1|provisioned|servicing', 'n1|provisioned|OK', true)).toBe(true);
  });
  it('leaves a state on the way alone', () => {
    expect(readsOnHostChange('n1|available|OK', 'n1|preparing|OK', true)).toBe(false);
  });
  it('does not read at once a host registered again where it rests (Ironic lost its node): its next scheduled read takes the new node', () => {
    expect(readsOnHostChange('n1|available|OK', 'n2|available|OK', true)).toBe(false);
    expect(readsOnHostChange('n1|provisioned|OK', 'n2|provisioned|OK', true)).toBe(false);
  });
  it('still reads one whose last pass left something pending (no quiet pass), or whose state moved too', () => {
    expect(readsOnHostChange('n1|available|OK', 'n2|available|OK', false)).toBe(true);
    expect(readsOnHostChange('n1|available|error', 'n2|available|OK', true)).toBe(true);
    expect(readsOnHostChange('n1|registering|OK', 'n2|available|OK', true)).toBe(true);
  });
});
