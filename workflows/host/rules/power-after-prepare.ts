/**
 * The power-on that follows a prepare, done by the prepare's activity. A host created with `online: true` and no
 * image becomes available and is then powered on by a power operation of its own: an activity, a workflow task
 * and two search-attribute upserts, and Ironic read once more. When the state machine would decide exactly that
 * power operation next (a plain power-on through Ironic, nothing before it), the prepare's activity powers the
 * node on from the read it made; should that fail, the host's power operation follows as before and records it.
 */
import type { HostState } from '../../../contracts/host';
import { decide } from '../decide';
import { powerPath } from '../provisioners/power';
import { provisionerTraits } from '../provisioners/traits';

/** What the host would decide once its prepare succeeded is a power-on through Ironic. */
export function powersOnWhenAvailable(s: HostState): boolean {
  if (!provisionerTraits(s.spec).ironicNode || powerPath(s.spec, s.status.provisioning.ID || undefined) !== 'ironic') return false;
  const after: HostState = {
    ...s,
    status: { ...s.status, provisioning: { ...s.status.provisioning, state: 'available' }, errorType: '', errorMessage: '', errorCount: 0, operationalStatus: 'OK' },
  };
  const next = decide(after);
  return next.kind === 'operation' && next.op === 'power' && next.power?.on === true && next.power.mode === undefined;
}
