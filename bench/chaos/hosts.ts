/**
 * The chaos run's hosts: which mode drives each (HTTP API or CRD shim), which
 * are `fake://` hosts on Ironic and which `direct` live-ISO hosts on a sushy
 * system behind a BMC proxy of their own, and the secrets planted in each
 * (a password and user/network data unique to the host and the run), which
 * must never show in a history or a log.
 */
import type { HostSpec, Image } from '../../model/host';
import { IMAGE } from '../common';
import type { ChaosOptions } from './options';
import type { Random } from './random';

export type HostMode = 'api' | 'k8s';

export interface ChaosHost {
  index: number;
  name: string;
  namespace: string;
  mode: HostMode;
  kind: 'fake' | 'direct';
  /** `<namespace>/<name>`. */
  key: string;
  spec: HostSpec;
  image: Image;
  password: string;
  userData?: string;
  networkData?: string;
  /** Direct hosts: the index of its sushy system and BMC proxy. */
  bmc?: number;
}

export const STEPS = ['available', 'provisioned', 'rebooted', 'deprovisioned', 'gone'] as const;
export type Step = (typeof STEPS)[number];

export const credentialsName = (h: Pick<ChaosHost, 'name'>): string => `${h.name}-bmc-secret`;
export const userDataName = (h: Pick<ChaosHost, 'name'>): string => `${h.name}-user-data`;
export const networkDataName = (h: Pick<ChaosHost, 'name'>): string => `${h.name}-network-data`;

export interface HostSetting {
  namespaces: Record<HostMode, string>;
  /** The BMC address of direct host number i (its own proxy in front of sushy). */
  bmcAddress: (i: number) => string;
  /** The password of the run's sushy (every direct host's BMC). */
  sushyPassword: string;
  isoUrl: string;
}

/**
 * `hosts` hosts: with mode both, even indexes through the API and odd ones
 * through the shim; the last `bmcHosts` are direct hosts (so both modes get some).
 */
export function makeChaosHosts(opts: Pick<ChaosOptions, 'hosts' | 'mode' | 'bmcHosts'>, rng: Random, setting: HostSetting): ChaosHost[] {
  const hex = (x: number): string => x.toString(16).padStart(2, '0');
  const macBase = [rng.int(0, 255), rng.int(0, 255)];
  const firstDirect = opts.hosts - opts.bmcHosts;
  return Array.from({ length: opts.hosts }, (_, index): ChaosHost => {
    const mode: HostMode = opts.mode === 'both' ? (index % 2 === 0 ? 'api' : 'k8s') : opts.mode;
    const namespace = setting.namespaces[mode];
    const name = `c-${String(index).padStart(4, '0')}`;
    const base = { index, name, namespace, mode, key: `${namespace}/${name}` };
    if (index >= firstDirect) {
      const bmc = index - firstDirect;
      return {
        ...base,
        kind: 'direct',
        bmc,
        spec: { bmc: { address: setting.bmcAddress(bmc), credentialsName: credentialsName(base) }, online: true, provisioner: 'direct' },
        image: { url: setting.isoUrl, format: 'live-iso' },
        password: setting.sushyPassword,
      };
    }
    const secret = rng.hex(16);
    const k8sRefs = mode === 'k8s' ? { userData: { name: userDataName(base), namespace }, networkData: { name: networkDataName(base), namespace } } : {};
    return {
      ...base,
      kind: 'fake',
      spec: {
        bmc: { address: `fake://${name}`, credentialsName: credentialsName(base) },
        bootMACAddress: ['52', 'c4', hex(macBase[0]!), hex(macBase[1]!), hex(index >> 8), hex(index & 0xff)].join(':'),
        online: true,
        ...k8sRefs,
      },
      image: IMAGE,
      password: `chaos-pw-${rng.hex(20)}`,
      userData: `#cloud-config\nhostname: ${name}\n# chaos-user-data-${secret}\n`,
      networkData: JSON.stringify({ links: [], networks: [], services: [{ type: 'dns', address: '192.0.2.53' }], chaos: `chaos-network-data-${secret}` }),
    };
  });
}

/** Every planted secret (passwords and the distinctive parts of user and network data). */
export function plantedSecrets(hosts: ChaosHost[]): string[] {
  const out = new Set<string>();
  for (const h of hosts) {
    out.add(h.password);
    for (const s of [h.userData, h.networkData]) {
      const marker = /chaos-(?:user|network)-data-[0-9a-f]+/.exec(s ?? '')?.[0];
      if (marker) out.add(marker);
    }
  }
  return [...out];
}
