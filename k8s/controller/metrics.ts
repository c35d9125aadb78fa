/**
 * Metal3's `metal3_*` Prometheus series (BMO's internal/controller/metal3.io/metrics.go: same names,
 * labels and buckets), so dashboards and alerts built on BMO keep working. BMO counts inside its
 * state machine; here the host workflows own the state, so the controller derives the series from
 * what it sees of each BareMetalHost's status through its watch: a new state, an operation's end in
 * `operationHistory`, a higher `errorCount`, a `poweredOn` change. prom-client (the Prometheus
 * project's Node.js client) writes the exposition format.
 */
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { HostStatus } from '../../model/host';
import { DELETE_RETRY_LIMIT } from '../../contracts/host';

/** BMO's event reasons, which are its `error_type` label values (recordActionFailure). */
const ERROR_LABEL: Record<string, string> = {
  'registration error': 'RegistrationError',
  'inspection error': 'InspectionError',
  'preparation error': 'PreparationError',
  'provisioning error': 'ProvisioningError',
  'power management error': 'PowerManagementError',
  'provisioned registration error': 'ProvisionedRegistrationError',
  'detach error': 'DetachError',
  'servicing error': 'ServicingError',
};

const SLOW_OPERATION_BUCKETS = [30, 90, 180, 360, 720, 1440];
const OPERATIONS = ['register', 'inspect', 'provision', 'deprovision'] as const;

type Status = Partial<
  Pick<HostStatus, 'provisioning' | 'operationHistory' | 'errorCount' | 'errorType' | 'errorMessage' | 'poweredOn' | 'operationalStatus' | 'triedCredentials'>
>;

/** What the controller sees of a host besides its status (k8s/controller/metric-facts.ts). */
export interface HostFacts {
  /** `spec.bmc.credentialsName`, and whether the controller's Secret watch holds that Secret. */
  credentials?: { name: string; found: boolean };
  /** Deleted while detached with deleteAction "delay": the delete waits for the annotation's removal. */
  deleteDelayed?: boolean;
}

/** readSecretKey's message for a credentials Secret without a username or password (BMO's CredentialsValidationError). */
const CREDENTIALS_INVALID = /has no non-empty key "(?:username|password)"/;
/** The same for a user/network/meta data Secret: BMO's host_data_type is the key it wanted. */
const CONFIG_DATA_MISSING = /has no non-empty key "(userData|networkData|metaData)"/;

/** A host delayed in one of these states waits to deprovision (it waits where it is: docs/kubernetes.md, *Provisioning limit*). */
const BEFORE_DEPROVISIONING = new Set(['provisioned', 'externally provisioned', 'deprovisioning', 'deleting', 'powering off before delete']);

export class ControllerMetrics {
  readonly registry = new Registry();
  private readonly reconciles = new Counter({ name: 'metal3_reconcile_total', help: 'The number of times hosts have been reconciled', labelNames: ['namespace', 'host'], registers: [this.registry] });
  private readonly reconcileErrors = new Counter({ name: 'metal3_reconcile_error_total', help: 'The number of times the operator has failed to reconcile a host', registers: [this.registry] });
  private readonly hostErrors = new Counter({ name: 'metal3_host_error_total', help: 'The number of times hosts have entered an error state', labelNames: ['error_type'], registers: [this.registry] });
  private readonly powerChanges = new Counter({ name: 'metal3_operation_power_change_total', help: 'Number of times a host has been powered on or off', labelNames: ['namespace', 'host', 'on_off'], registers: [this.registry] });
  private readonly stateChanges = new Counter({ name: 'metal3_provisioning_state_change_total', help: 'Number of times a state transition has occurred', labelNames: ['prev_state', 'new_state'], registers: [this.registry] });
  private readonly durations: Record<(typeof OPERATIONS)[number], Histogram> = {
    // BMO gives registration the client's default buckets and the others its slow-operation buckets.
    register: new Histogram({ name: 'metal3_operation_register_duration_seconds', help: 'Length of time per registration per host', labelNames: ['namespace', 'host'], registers: [this.registry] }),
    inspect: new Histogram({ name: 'metal3_operation_inspect_duration_seconds', help: 'Length of time per hardware inspection per host', labelNames: ['namespace', 'host'], buckets: SLOW_OPERATION_BUCKETS, registers: [this.registry] }),
    provision: new Histogram({ name: 'metal3_operation_provision_duration_seconds', help: 'Length of time per hardware provision operation per host', labelNames: ['namespace', 'host'], buckets: SLOW_OPERATION_BUCKETS, registers: [this.registry] }),
    deprovision: new Histogram({ name: 'metal3_operation_deprovision_duration_seconds', help: 'Length of time per hardware deprovision operation per host', labelNames: ['namespace', 'host'], buckets: SLOW_OPERATION_BUCKETS, registers: [this.registry] }),
  };
  // BMO's names, double underscore included (recordActionDelayed).
  private readonly delayed = {
    provisioning: new Counter({ name: 'metal3_delayed__provisioning_total', help: 'The number of times hosts have been delayed while provisioning due a busy provisioner', labelNames: ['namespace', 'host'], registers: [this.registry] }),
    deprovisioning: new Counter({ name: 'metal3_delayed__deprovisioning_total', help: 'The number of times hosts have been delayed while deprovisioning due a busy provisioner', labelNames: ['namespace', 'host'], registers: [this.registry] }),
  };
  // BMO's plain counters (no labels). Two of them, delete_without_powering_off and waiting_for_preprov_image,
  // BMO declares and increments but never registers, so its /metrics lacks them; exported here all the same.
  private readonly counters = {
    credentialsMissing: this.counter('metal3_credentials_missing_total', "Number of times a host's credentials are found to be missing"),
    credentialsInvalid: this.counter('metal3_credentials_invalid_total', "Number of times a host's credentials are found to be invalid"),
    // Always 0: the controller reads Secrets through its watch, which has a Secret or has not (missing);
    // an activity's failed read is retried by Temporal and never reaches the status.
    credentialsUnhandled: this.counter('metal3_credentials_unhandled_error_total', "Number of times getting a host's credentials fails in an unexpected way"),
    credentialsUpdated: this.counter('metal3_credentials_updated_total', "Number of times a host's credentials change"),
    // Always 0: BMO counts a failed call to Ironic while validating the BMC; here the activity retries it (Temporal)
    // and a BMC Ironic cannot reach is a registration error (metal3_host_error_total), as in BMO.
    noManagementAccess: this.counter('metal3_credentials_no_management_access_total', 'Number of times a host management interface is unavailable'),
    registrationRequired: this.counter('metal3_host_registration_required_total', 'Number of times a host is found to be unregistered'),
    unmanaged: this.counter('metal3_host_unmanaged_total', 'Number of times a host is found to be unmanaged'),
    deleteWithoutDeprovisioning: this.counter('metal3_delete_without_deprovisioning_total', 'Number of times a host is deleted despite deprovisioning failing'),
    deleteWithoutPoweringOff: this.counter('metal3_delete_without_powering_off_total', 'Number of times a host is deleted despite powering off failing'),
    // Always 0: BMO counts reconciles while Ironic is not up yet; here the workflows wait for Ironic (activities
    // retry), with no host status of their own for it.
    provisionerNotReady: this.counter('metal3_provisioner_not_ready_total', 'Number of times a host is not provision ready'),
    deleteDelayedForDetached: this.counter('metal3_delete_delayed_for_detached_total', 'Number of times a host delete action was delayed due to the detached annotation'),
    // Always 0: metalflow boots Ironic's own deploy ramdisk and has no PreprovisioningImage to wait for.
    waitingForPreprovImage: this.counter('metal3_waiting_for_preprov_image_total', 'Number of times the preprovisioning image is required but not available'),
  };
  private readonly configDataErrors = new Counter({ name: 'metal3_host_config_data_error_total', help: 'Number of times the operator has failed to retrieve host configuration data', labelNames: ['host_data_type'], registers: [this.registry] });
  /** The status last seen per host; a host first seen (a restart) only sets the baseline. */
  private readonly seen = new Map<string, Status>();
  /** Hosts whose credentials Secret is missing, and hosts whose delete waits for a detached annotation (once per episode). */
  private readonly missing = new Set<string>();
  private readonly delayedDelete = new Set<string>();

  constructor(opts: { processMetrics?: boolean } = {}) {
    if (opts.processMetrics !== false) collectDefaultMetrics({ register: this.registry });
  }

  private counter(name: string, help: string): Counter {
    return new Counter({ name, help, registers: [this.registry] });
  }

  reconciled(namespace: string, host: string, ok: boolean): void {
    if (!ok) this.reconcileErrors.inc();
    // The reconcile that finds a host gone comes after its series were removed: counting it would bring them back.
    if (this.seen.has(`${namespace}/${host}`)) this.reconciles.inc({ namespace, host });
  }

  /** Every series labelled with this host: a deleted host's would otherwise stay for the life of the process. */
  private removeHost(namespace: string, host: string): void {
    const labels = { namespace, host };
    this.reconciles.remove(labels);
    for (const on_off of ['on', 'off']) this.powerChanges.remove({ ...labels, on_off });
    for (const h of Object.values(this.durations)) h.remove(labels);
    for (const c of Object.values(this.delayed)) c.remove(labels);
  }

  /**
   * A host's object as the watch delivered it: its status (`{}` before the first status write,
   * undefined once deleted) and what else the controller sees of it.
   */
  observe(namespace: string, host: string, status: Status | undefined, facts: HostFacts = {}): void {
    const key = `${namespace}/${host}`;
    if (!status) {
      this.seen.delete(key);
      this.missing.delete(key);
      this.delayedDelete.delete(key);
      this.removeHost(namespace, host);
      return;
    }
    this.countFacts(key, facts);
    const before = this.seen.get(key);
    this.seen.set(key, status);
    if (!before) return;
    this.countStatusChange(namespace, host, before, status);
  }

  /** BMO counts these on every reconcile that finds them; here once each time a host starts to be so. */
  private countFacts(key: string, facts: HostFacts): void {
    const episode = (set: Set<string>, now: boolean, counter: Counter) => {
      if (now && !set.has(key)) counter.inc();
      if (now) set.add(key);
      else set.delete(key);
    };
    episode(this.missing, facts.credentials?.found === false, this.counters.credentialsMissing);
    episode(this.delayedDelete, facts.deleteDelayed === true, this.counters.deleteDelayedForDetached);
  }

  private countStatusChange(namespace: string, host: string, before: Status, status: Status): void {
    const tried = (s: Status) => `${s.triedCredentials?.credentials?.name ?? ''}/${s.triedCredentials?.credentialsVersion ?? ''}`;
    // BMO's moment: a registration tries a Secret version it had not tried (the first one included).
    if (status.triedCredentials?.credentialsVersion && tried(status) !== tried(before)) this.counters.credentialsUpdated.inc();
    const failures = (status.errorCount ?? 0) - (before.errorCount ?? 0);
    const message = status.errorMessage ?? '';
    if (message && (failures > 0 || message !== before.errorMessage)) {
      if (CREDENTIALS_INVALID.test(message)) this.counters.credentialsInvalid.inc();
      const data = CONFIG_DATA_MISSING.exec(message)?.[1];
      if (data) this.configDataErrors.inc({ host_data_type: data });
    }
    const start = status.operationHistory?.register?.start;
    if (start && start !== before.operationHistory?.register?.start) this.counters.registrationRequired.inc();
    const next = status.provisioning?.state;
    const prev = before.provisioning?.state;
    if (next === 'unmanaged' && prev !== 'unmanaged') this.counters.unmanaged.inc();
    if (!prev || !next) return;
    if (prev !== next) this.stateChanges.inc({ prev_state: prev, new_state: next });
    // The workflow's give-up (DeprovisioningSkipped/PowerOffSkipped, workflows/host/decide.ts deleteGiveUp) as BMO
    // counts it: leaving a delete's cleanup state after more failures than its retry limit. From
    // deprovisioning straight to deleting (the host cannot be registered) is BMO's powering-off counter.
    const gaveUp = before.operationalStatus === 'error' && (before.errorCount ?? 0) > DELETE_RETRY_LIMIT;
    if (gaveUp && prev === 'deprovisioning' && next === 'powering off before delete') this.counters.deleteWithoutDeprovisioning.inc();
    if (gaveUp && (prev === 'deprovisioning' || prev === 'powering off before delete') && next === 'deleting') this.counters.deleteWithoutPoweringOff.inc();
    for (const op of OPERATIONS) {
      const m = status.operationHistory?.[op];
      if (!m?.start || !m.end || before.operationHistory?.[op]?.end === m.end) continue;
      const seconds = (Date.parse(m.end) - Date.parse(m.start)) / 1000;
      if (Number.isFinite(seconds) && seconds >= 0) this.durations[op].observe({ namespace, host }, seconds);
    }
    const errorType = ERROR_LABEL[status.errorType ?? ''];
    if (failures > 0 && errorType) this.hostErrors.inc({ error_type: errorType }, failures);
    if (status.operationalStatus === 'delayed' && before.operationalStatus !== 'delayed') {
      this.delayed[BEFORE_DEPROVISIONING.has(next) ? 'deprovisioning' : 'provisioning'].inc({ namespace, host });
    }
    if (status.poweredOn !== undefined && before.poweredOn !== undefined && status.poweredOn !== before.poweredOn) {
      this.powerChanges.inc({ namespace, host, on_off: status.poweredOn ? 'on' : 'off' });
    }
  }
}
