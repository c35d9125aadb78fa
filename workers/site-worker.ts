/**
 * A site worker (docs/sites.md): polls only its site's task queue
 * (model/site.ts) with the activities that touch the site's hardware
 * (site-activities.ts), built from the site's own settings, and the two
 * reads of its Ironic that no host workflow sends: the site's power sentinel
 * watch, a node's firmware read and the controller's node health list. It runs no workflow: the host workflows,
 * fleets, pivots, remediations, the site's sentinel and firmware reads stay
 * on the central workers, which send the site's work here.
 */
import { Worker, type NativeConnection } from '@temporalio/worker';
import type { DataConverter } from '@temporalio/common';
import { createSiteActivities, type SiteActivityDeps } from './site-activities';
import { createPowerSentinelActivities } from '../activities/power/sentinel';
import { createFirmwareInventoryActivities } from '../activities/ironic/firmware-inventory';
import { createNodeHealthActivities } from '../activities/ironic/node-health';
import { activityFailureMapping } from './activity-failures';
import { heartbeatThrottleSeconds } from '../config/env';
import type { Tracing } from '../clients/telemetry/tracing';
import { tracingActivityInterceptors } from '../clients/temporal/tracing-interceptors';

export interface SiteWorkerDeps extends SiteActivityDeps {
  connection: NativeConnection;
  namespace: string;
  /** The site's task queue (Site.taskQueue). */
  taskQueue: string;
  dataConverter?: DataConverter;
  /** Spans of its activities and their HTTP requests, in the trace of the host workflow that sent them (METALFLOW_OTLP_ENDPOINT). */
  tracing?: Tracing;
}

export async function createSiteWorker(deps: SiteWorkerDeps): Promise<Worker> {
  return Worker.create({
    connection: deps.connection,
    namespace: deps.namespace,
    taskQueue: deps.taskQueue,
    ...(deps.dataConverter ? { dataConverter: deps.dataConverter } : {}),
    interceptors: { activity: [...(deps.tracing ? [tracingActivityInterceptors(deps.tracing)] : []), activityFailureMapping] },
    activities: {
      ...createSiteActivities(deps),
      // The site's power sentinel (workflows/power/power-sentinel.ts), firmware reads (workflows/firmware/firmware-inventory.ts)
      // and the controller's node health list (workflows/site/node-health.ts).
      ...createPowerSentinelActivities({ ironic: deps.ironic }),
      ...createFirmwareInventoryActivities({ ironic: deps.ironic }),
      ...createNodeHealthActivities({ ironic: deps.ironic }),
    },
    // As the central worker: most activities wait on Ironic or a BMC, one per host in flight.
    maxConcurrentActivityTaskExecutions: 2000,
    maxHeartbeatThrottleInterval: `${heartbeatThrottleSeconds()} seconds`,
  });
}
