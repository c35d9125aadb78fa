/**
 * Custom search attributes, so the Temporal UI and `temporal workflow list --query`
 * can filter hosts. They are registered when the dev server starts
 * (scripts/search-attributes.txt must list the same names; a test checks it).
 * Search attributes are not encrypted: never put a secret in one.
 */
export const SEARCH_ATTRIBUTES = {
  hostName: { name: 'MetalflowHostName', type: 'KEYWORD' },
  hostNamespace: { name: 'MetalflowHostNamespace', type: 'KEYWORD' },
  provisioningState: { name: 'MetalflowProvisioningState', type: 'KEYWORD' },
  bmcType: { name: 'MetalflowBmcType', type: 'KEYWORD' },
  operationalStatus: { name: 'MetalflowOperationalStatus', type: 'KEYWORD' },
  /** status.poweredOn, as last read from the BMC. */
  poweredOn: { name: 'MetalflowPoweredOn', type: 'BOOL' },
  /** The operation running now (enroll, provision, power, …); absent while none runs. */
  operation: { name: 'MetalflowOperation', type: 'KEYWORD' },
  /** status.errorType (Metal3's kinds: provisioning error, power management error, …); absent without an error. */
  errorType: { name: 'MetalflowErrorType', type: 'KEYWORD' },
  /**
   * The host's site (spec.site; `default` when it names none), what a fleet operation selects
   * and caps by. Absent on a host whose run began before hosts set it, until the host next
   * changes (its state, its spec) or hands over to a new run.
   */
  site: { name: 'MetalflowSite', type: 'KEYWORD' },
  /** Fleet operations (workflows/fleet/fleet.ts): what they do, where they are, how many hosts succeeded and failed. */
  fleetOperation: { name: 'MetalflowFleetOperation', type: 'KEYWORD' },
  fleetPhase: { name: 'MetalflowFleetPhase', type: 'KEYWORD' },
  fleetSucceeded: { name: 'MetalflowFleetSucceeded', type: 'INT' },
  fleetFailed: { name: 'MetalflowFleetFailed', type: 'INT' },
} as const;
