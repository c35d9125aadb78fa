/** The names of Metal3's BareMetalHost annotations that metalflow reads and writes (k8s/controller/annotations.ts parses their values). */
export const ANNOTATIONS = {
  paused: 'baremetalhost.metal3.io/paused',
  detached: 'baremetalhost.metal3.io/detached',
  status: 'baremetalhost.metal3.io/status',
  inspect: 'inspect.metal3.io',
  hardwareDetails: 'inspect.metal3.io/hardwaredetails',
  /** One-shot reboot; `reboot.metal3.io/<key>` keeps the host off until removed. */
  reboot: 'reboot.metal3.io',
} as const;
