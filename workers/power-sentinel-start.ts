/**
 * Starts a site's power sentinel (workflows/power/power-sentinel.ts) unless
 * METALFLOW_POWER_SENTINEL_SECONDS is 0: every worker of the site asks (the
 * central workers for the default site, its site workers for a configured
 * one), the first start wins and the others find it running (one sentinel per
 * site). The workflow runs on the central workers' task queue in either case;
 * a configured site's watch on the site's queue. With 0 the worker cancels a
 * sentinel still running from before (it is on by default, so "off" must stop
 * the one the last start left running).
 */
import { Client, WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, type DataConverter } from '@temporalio/client';
import { connectTemporalClient, type TemporalConnectionSettings } from '../clients/temporal/connection';
import { powerSentinelWorkflowId, type PowerSentinelWorkflow } from '../contracts/power-sentinel';
import { hostSiteQueue } from '../model/site';

interface SentinelTarget {
  connection: TemporalConnectionSettings;
  namespace: string;
  /** The central workers' task queue, where the workflow runs. */
  taskQueue: string;
  /** A configured site (its site worker starts it); unset: the default site. */
  site?: string;
  dataConverter?: DataConverter;
}

/** `power-sentinel/<central queue>` for the default site, `power-sentinel/site/<name>` for a configured one. */
const sentinelId = (opts: SentinelTarget): string => powerSentinelWorkflowId(hostSiteQueue(opts.site) ?? opts.taskQueue);

/** A client for one call at worker start, closed after it. */
async function withClient<T>(opts: SentinelTarget, use: (client: Client) => Promise<T>): Promise<T> {
  const connection = await connectTemporalClient(opts.connection);
  try {
    return await use(new Client({ connection, namespace: opts.namespace, ...(opts.dataConverter ? { dataConverter: opts.dataConverter } : {}) }));
  } finally {
    await connection.close();
  }
}

export async function startPowerSentinel(opts: SentinelTarget & { intervalSeconds: number }): Promise<string> {
  const workflowId = sentinelId(opts);
  const site = hostSiteQueue(opts.site) ? { site: opts.site } : {};
  return withClient(opts, async (client) => {
    try {
      await client.workflow.start<PowerSentinelWorkflow>('powerSentinelWorkflow', {
        workflowId,
        taskQueue: opts.taskQueue,
        args: [{ intervalSeconds: opts.intervalSeconds, ...site }],
        workflowIdConflictPolicy: 'USE_EXISTING',
      });
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    }
    return workflowId;
  });
}

/** Cancels the site's running sentinel; true when one was running. */
export async function stopPowerSentinel(opts: SentinelTarget): Promise<boolean> {
  return withClient(opts, async (client) => {
    const handle = client.workflow.getHandle(sentinelId(opts));
    try {
      if ((await handle.describe()).status.name !== 'RUNNING') return false;
      await handle.cancel();
      return true;
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return false;
      throw err;
    }
  });
}
