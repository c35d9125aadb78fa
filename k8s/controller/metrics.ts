/**
 * Metal3's `metal3_*` Prometheus series (BMO's internal/controller/metal3.io/metrics.go: same names,
 * labels and buckets), so dashboards and alerts built on BMO keep working. BMO counts inside its
 * state machine; here the host workflows own the state, so the controller derives the series from
 * what it sees of each BareMetalHost's status through its watch: a new state, an operation's end in
 * `operationHistory`, a higher `errorCount`, a `poweredOn` change. prom-client (the Prometheus
 * project's Node.js client) writes the exposition format.
 */
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { HostStatus } from '../../types/host';

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

type Status = Partial<Pick<HostStatus, 'provisioning' | 'operationHistory' | 'errorCount' | 'errorType' | 'poweredOn' | 'operationalStatus'>>;

/** A host delayed in one of these states waits to deprovision (it waits where it is: README "Provisioning limit"). */
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
  /** The status last seen per host; a host first seen (a restart) only sets the baseline. */
  private readonly seen = new Map<string, Status>();

  constructor(opts: { processMetrics?: boolean } = {}) {
    if (opts.processMetrics !== false) collectDefaultMetrics({ register: this.registry });
  }

  reconciled(namespace: string, host: string, ok: boolean): void {
    this.reconciles.inc({ namespace, host });
    if (!ok) this.reconcileErrors.inc();
  }

  /** A host's object as the watch delivered it (undefined: deleted). */
  observe(namespace: string, host: string, status: Status | undefined): void {
    const key = `${namespace}/${host}`;
    const before = this.seen.get(key);
    if (!status?.provisioning) {
      if (!status) this.seen.delete(key);
      return;
    }
    this.seen.set(key, status);
    if (!before?.provisioning) return;
    const prev = before.provisioning.state;
    const next = status.provisioning.state;
    if (prev !== next) this.stateChanges.inc({ prev_state: prev, new_state: next });
    for (const op of OPERATIONS) {
      const m = status.operationHistory?.[op];
      if (!m?.start || !m.end || before.operationHistory?.[op]?.end === m.end) continue;
      const seconds = (Date.parse(m.end) - Date.parse(m.start)) / 1000;
      if (Number.isFinite(seconds) && seconds >= 0) this.durations[op].observe({ namespace, host }, seconds);
    }
    const failures = (status.errorCount ?? 0) - (before.errorCount ?? 0);
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
