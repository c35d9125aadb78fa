/**
 * The controller's built-in health check (k8s/controller/health-check.ts):
 * off unless METALFLOW_HEALTH_CHECK=true. Every variable is in config/settings.ts
 * and docs/configuration.md; the check itself in docs/remediation.md.
 */
import { NODE_HANDLING, REMEDIATION_DEFAULTS, MAX_RETRY_LIMIT, type NodeHandling } from '../model/remediation';

export interface HealthCheckConfig {
  /** How long a Node must be NotReady or Unknown before its host is remediated. */
  notReadySeconds: number;
  /** Hosts remediating at once, over every group. */
  maxRemediating: number;
  /** The label (BareMetalHost first, else Node) that names a host's group, e.g. its rack. */
  groupLabel: string;
  /** At most this share (percent) of a group's hosts remediating at once (at least one host of any group). */
  groupMaxPercent: number;
  /** The strategy of the HostRemediations it creates. */
  retryLimit: number;
  timeoutSeconds: number;
  nodeHandling: NodeHandling;
}

export const HEALTH_CHECK_DEFAULTS = {
  notReadySeconds: 300,
  maxRemediating: 2,
  groupLabel: 'topology.kubernetes.io/zone',
  groupMaxPercent: 25,
} as const;

function whole(env: NodeJS.ProcessEnv, name: string, min: number, max: number, fallback: number): number {
  const value = env[name];
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`${name} must be a whole number from ${min} to ${max}, got "${value}"`);
  return n;
}

/** Undefined when the health check is off (the default). */
export function loadHealthCheckConfig(env: NodeJS.ProcessEnv): HealthCheckConfig | undefined {
  const on = env.METALFLOW_HEALTH_CHECK ?? '';
  if (!['', 'true', 'false'].includes(on)) throw new Error(`METALFLOW_HEALTH_CHECK must be "true" or "false", got "${on}"`);
  if (on !== 'true') return undefined;
  const nodeHandling = env.METALFLOW_HEALTH_CHECK_NODE_HANDLING || 'OutOfServiceTaint';
  if (!(NODE_HANDLING as readonly string[]).includes(nodeHandling)) {
    throw new Error(`METALFLOW_HEALTH_CHECK_NODE_HANDLING must be one of ${NODE_HANDLING.join(', ')}, got "${nodeHandling}"`);
  }
  return {
    // From 1 s (tests); a real cluster's node lifecycle controller marks a Node Unknown after 40 s already.
    notReadySeconds: whole(env, 'METALFLOW_HEALTH_CHECK_NOT_READY_SECONDS', 1, 86_400, HEALTH_CHECK_DEFAULTS.notReadySeconds),
    maxRemediating: whole(env, 'METALFLOW_HEALTH_CHECK_MAX_REMEDIATING', 1, 10_000, HEALTH_CHECK_DEFAULTS.maxRemediating),
    groupLabel: env.METALFLOW_HEALTH_CHECK_GROUP_LABEL || HEALTH_CHECK_DEFAULTS.groupLabel,
    groupMaxPercent: whole(env, 'METALFLOW_HEALTH_CHECK_GROUP_MAX_PERCENT', 1, 100, HEALTH_CHECK_DEFAULTS.groupMaxPercent),
    // The HostRemediation CRD's bounds (CAPM3's): the API server would refuse anything else.
    retryLimit: whole(env, 'METALFLOW_HEALTH_CHECK_RETRY_LIMIT', 1, MAX_RETRY_LIMIT, REMEDIATION_DEFAULTS.retryLimit),
    timeoutSeconds: whole(env, 'METALFLOW_HEALTH_CHECK_TIMEOUT_SECONDS', 100, 86_400, REMEDIATION_DEFAULTS.timeoutSeconds),
    nodeHandling: nodeHandling as NodeHandling,
  };
}
