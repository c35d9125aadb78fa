/**
 * A host workflow with nothing behind it, for the controller scale round
 * (bench/controller-scale.ts): it answers the updates and the query the
 * controller sends, as the real one names them, holds a delete while paused
 * and completes once deleted. No activity, no hardware: what is measured is
 * the controller and what it asks of Temporal.
 */
import { condition, defineQuery, defineUpdate, setHandler } from '@temporalio/workflow';

interface Pause {
  paused: boolean;
  reason?: string;
}

export async function hostWorkflow(): Promise<void> {
  let deleteRequested = false;
  let paused: { reason: string } | undefined;
  let updatePolicy: unknown = null;
  let generation = 0;
  const view = () => ({
    deleteRequested,
    ...(paused ? { paused } : {}),
    power: { holds: {} },
    updatePolicy,
    status: { provisioning: { state: 'available', ID: '' } },
  });
  setHandler(defineQuery('host'), view);
  setHandler(defineUpdate<unknown, [unknown]>('applySpec'), () => ({ generation: ++generation, changed: true, view: view() }));
  setHandler(defineUpdate<unknown, [unknown]>('applyDirectives'), () => ({ changed: true }));
  setHandler(defineUpdate<unknown, [Pause]>('setPaused'), (p) => {
    paused = p.paused ? { reason: p.reason ?? '' } : undefined;
    return { paused: p.paused };
  });
  setHandler(defineUpdate<unknown, [unknown]>('powerRequests'), () => view().power);
  setHandler(defineUpdate<unknown, [unknown]>('setUpdatePolicy'), (p) => {
    updatePolicy = p;
    return { changed: true };
  });
  setHandler(defineUpdate<unknown, []>('deleteHost'), () => {
    deleteRequested = true;
    return { accepted: true };
  });
  setHandler(defineUpdate<unknown, [unknown]>('restoreStatus'), () => ({ restored: false, reason: 'stub' }));
  setHandler(defineUpdate<unknown, []>('requestInspection'), () => ({ accepted: true, pending: false }));
  await condition(() => deleteRequested && !paused);
}
