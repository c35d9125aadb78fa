/**
 * Events as Metal3's Bare Metal Operator names them, so alerts and
 * dashboards written for BMO keep working: the reporting component, and
 * BMO's reasons where metalflow's workflow has an Event for the same thing
 * (BMO `pkg/provisioner/ironic/*.go` `p.publisher(...)`,
 * `internal/controller/metal3.io/*.go` `publishEvent`; BMO logs a state
 * change, it writes no Event for it). metalflow's own
 * Events where BMO has none (`StateChanged` of other transitions, `PrepareSucceeded`,
 * `RegistrationUpdated`, …) are kept as they are; error reasons
 * (`RegistrationError`, `ProvisioningError`, …) are already BMO's.
 * Messages stay metalflow's (BMO's quote the image URL, which may be a
 * pre-signed credential). Pure: the workflow's history keeps its own reasons,
 * this is how they are written to Kubernetes.
 */
import type { HostEvent } from '../../model/host-event';

/** `source.component` of BMO's Events (`BareMetalHost.NewEvent`). */
export const BMO_EVENT_COMPONENT = 'metal3-baremetal-controller';
/** `reportingComponent` (events.k8s.io `reportingController`) of BMO's Events. */
export const BMO_REPORTING_CONTROLLER = 'metal3.io/baremetal-controller';

/** metalflow's "<op> succeeded" reasons that are BMO's "…Complete" ones. */
const COMPLETED: Record<string, string[]> = {
  // BMO: Registered when the node is created, BMCAccessValidated once it manages it.
  EnrollSucceeded: ['Registered', 'BMCAccessValidated'],
  InspectSucceeded: ['InspectionComplete'],
  ProvisionSucceeded: ['ProvisioningComplete'],
  DeprovisionSucceeded: ['DeprovisioningComplete'],
};

/** The state a host entered, BMO's Event for starting it (it stands for metalflow's StateChanged of that transition). */
const STARTED: Record<string, string> = {
  inspecting: 'InspectionStarted',
  provisioning: 'ProvisioningStarted',
  deprovisioning: 'DeprovisioningStarted',
  // BMO: "Discovered host with no BMC details".
  unmanaged: 'Discovered',
};

/**
 * The state an Event's message names as entered: a StateChanged's `provisioning state <from> → <to>`
 * (workflows/host/host.ts), or an operation's `<op> succeeded; provisioning state <next>[ (note)]`
 * (workflows/host/operation.ts: registration goes straight on to inspecting).
 */
export function enteredState(message: string): string | undefined {
  return /^provisioning state .* → (.+)$/.exec(message)?.[1] ?? /^\w+ succeeded; provisioning state ([a-z ]+?)(?: \(.*)?$/.exec(message)?.[1];
}

/** What to write to Kubernetes for one of the workflow's Events; `poweredOn` is the status published with it. */
export function asBmoEvents(event: HostEvent, poweredOn: boolean): HostEvent[] {
  const renamed = COMPLETED[event.reason]?.map((reason) => ({ ...event, reason })) ??
    // BMO's PowerOn / PowerOff, after the change (a reboot is not one in BMO either).
    (event.reason === 'PowerSucceeded' ? [{ ...event, reason: poweredOn ? 'PowerOn' : 'PowerOff' }] : [event]);
  const entered = event.reason === 'StateChanged' || event.reason.endsWith('Succeeded') ? enteredState(event.message) : undefined;
  const started = STARTED[entered ?? ''];
  if (!started) return renamed;
  // A transition BMO has a Started Event for is written as that one alone, with the StateChanged's message: the two
  // said the same thing in two Events (an Event is an etcd write; two a lifecycle saved, BMO writes one).
  return event.reason === 'StateChanged' ? [{ ...event, reason: started }] : [...renamed, { ...event, reason: started }];
}
