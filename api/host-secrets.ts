/**
 * The secrets the API stores for a host (BMC credentials, user/network/meta
 * data sent inline). Each is recorded as the host's own: the API overwrites
 * only a host's own Secrets, never one another host (or an operator) wrote,
 * and removes them when the host is deleted, so a host created again under
 * the same name starts without its predecessor's password.
 */
import type { FieldError } from '../model/field-error';
import type { HostRef, HostSpec } from '../model/host';
import { defaultSecretNames } from '../model/host-ref';
import { inlineConfigDataErrors } from '../model/config-data';
import type { SecretData, SecretStore } from '../clients/secrets/secret-store';

export interface SecretWrite {
  name: string;
  data: SecretData;
  /** The spec field naming the Secret, for errors. */
  field: string;
}

interface Previous {
  name: string;
  data?: SecretData;
  owner?: string | null;
}

export const ownerOf = (ref: HostRef): string => `${ref.namespace}/${ref.name}`;

/** The Secrets a spec names, with the spec field and the request key that creates each. */
export function secretRefs(spec: HostSpec): [field: string, name: string | undefined, inlineKey: string][] {
  return [
    ['spec.bmc.credentialsName', spec.bmc?.credentialsName, 'credentials'],
    ['spec.userData.name', spec.userData?.name, 'userData'],
    ['spec.networkData.name', spec.networkData?.name, 'networkData'],
    ['spec.metaData.name', spec.metaData?.name, 'metaData'],
  ];
}

/** The refusal of inline credentials for a host of a site that holds them itself. */
export function siteHeldCredentials(ref: HostRef, spec: HostSpec, site: string): FieldError {
  const name = spec.bmc?.credentialsName ?? '<spec.bmc.credentialsName>';
  return {
    field: 'credentials',
    reason:
      `are not accepted for a host of site "${site}", which holds its BMC credentials at the site ("secrets": "site" in METALFLOW_SITES_FILE): ` +
      `the central plane never stores them. Put them in site "${site}"'s own store as the Secret ${ref.namespace}/${name} ` +
      `(on its site worker's machine: npm run site-secret -- put ${ref.namespace} ${name} --username USER --password-file FILE; in Kubernetes mode a Secret in the site's cluster) ` +
      'and send the host without "credentials"',
  };
}

export class HostSecrets {
  constructor(private readonly store: SecretStore) {}

  /** Kubernetes' limit, or the store's when shorter. */
  private get maxNameLength(): number {
    return Math.min(253, this.store.maxNameLength ?? 253);
  }

  /**
   * Fills secret references the request's inline values will be stored under. `heldAt`: the host's site
   * when that site holds its hosts' BMC credentials itself (`"secrets": "site"`, docs/sites.md): the
   * central store must never hold them, so inline credentials are refused.
   */
  writesFor(
    ref: HostRef,
    input: { spec: HostSpec; credentials?: { username: string; password: string }; userData?: string; networkData?: string; metaData?: string },
    heldAt?: string,
  ): { spec: HostSpec; writes: SecretWrite[] } | { errors: FieldError[] } {
    // Refused here, before anything is stored: the worker would only find out at deploy.
    const dataErrors = inlineConfigDataErrors(input);
    if (dataErrors.length > 0) return { errors: dataErrors };
    const names = defaultSecretNames(ref);
    const spec: HostSpec = structuredClone(input.spec);
    const writes: SecretWrite[] = [];
    if (input.credentials && heldAt !== undefined) return { errors: [siteHeldCredentials(ref, spec, heldAt)] };
    if (input.credentials) {
      if (!spec.bmc) return { errors: [{ field: 'credentials', reason: 'are only accepted with spec.bmc, which names the Secret to store them in' }] };
      writes.push({ name: spec.bmc.credentialsName, data: { ...input.credentials }, field: 'spec.bmc.credentialsName' });
    }
    const inline = [
      ['userData', input.userData, names.userData],
      ['networkData', input.networkData, names.networkData],
      ['metaData', input.metaData, names.metaData],
    ] as const;
    for (const [key, value, defaultName] of inline) {
      if (value === undefined) continue;
      if (!spec[key] && defaultName.length > this.maxNameLength) {
        return {
          errors: [{ field: key, reason: `would be stored as the Secret "${ref.name}-…" of ${defaultName.length} characters, longer than the ${this.maxNameLength} a Secret name may have here; name a shorter Secret in spec.${key}.name` }],
        };
      }
      spec[key] ??= { name: defaultName };
      writes.push({ name: spec[key].name, data: { [key]: value }, field: `spec.${key}.name` });
    }
    return { spec, writes };
  }

  /**
   * Every secret the spec references must exist or be written by this request, and
   * every secret written must be this host's own. A Secret stored before owners were
   * recorded is taken over only by a host whose current spec already names it.
   */
  async check(ref: HostRef, spec: HostSpec, writes: SecretWrite[], currentSpec: () => Promise<HostSpec | undefined>, heldAt?: string): Promise<FieldError[]> {
    const errors: FieldError[] = [];
    const written = new Set(writes.map((w) => w.name));
    for (const [field, name] of secretRefs(spec)) {
      if (name && name.length > this.maxNameLength) {
        errors.push({ field, reason: `is ${name.length} characters; Secrets stored by this API have names of at most ${this.maxNameLength}` });
      }
    }
    if (errors.length > 0) return errors;
    for (const [field, name, inlineKey] of secretRefs(spec)) {
      if (!name || written.has(name)) continue;
      // Held at the site: not in this store, and this process cannot (and must not) look there.
      if (heldAt !== undefined && field === 'spec.bmc.credentialsName') continue;
      if (!(await this.store.read(ref.namespace, name))) {
        errors.push({ field, reason: `Secret ${ref.namespace}/${name} does not exist; send "${inlineKey}" in the request to create it` });
      }
    }
    const creds = writes.find((w) => w.name === spec.bmc?.credentialsName)?.data;
    if (creds && (!creds.username || !creds.password)) {
      errors.push({ field: 'credentials', reason: 'username and password must both be non-empty' });
    }
    let current: HostSpec | undefined | null = null;
    for (const w of writes) {
      const owner = await this.store.ownerOf(ref.namespace, w.name);
      if (owner === undefined || owner === ownerOf(ref)) continue;
      if (owner === null) {
        if (current === null) current = await currentSpec();
        if (current && secretRefs(current).some(([, name]) => name === w.name)) continue;
      }
      const whose = owner === null ? 'was not written for this host' : `belongs to host ${owner}`;
      errors.push({ field: w.field, reason: `Secret ${ref.namespace}/${w.name} ${whose}; the API only writes a host's own Secrets: name another one` });
    }
    return errors;
  }

  /** Writes the request's secrets as the host's own; returns what they replaced, to put back. */
  async write(ref: HostRef, writes: SecretWrite[]): Promise<Previous[]> {
    const previous = await Promise.all(
      writes.map(async (w) => ({
        name: w.name,
        data: await this.store.read(ref.namespace, w.name),
        owner: await this.store.ownerOf(ref.namespace, w.name),
      })),
    );
    for (const w of writes) await this.store.write(ref.namespace, w.name, w.data, ownerOf(ref));
    return previous;
  }

  async restore(ref: HostRef, previous: Previous[]): Promise<void> {
    for (const p of previous) {
      if (p.data) await this.store.write(ref.namespace, p.name, p.data, p.owner ?? undefined);
      else await this.store.remove(ref.namespace, p.name);
    }
  }

  /** Removes every secret recorded as the host's (it was deleted); returns their names. */
  async removeOwned(ref: HostRef): Promise<string[]> {
    const names = await this.store.ownedBy(ref.namespace, ownerOf(ref));
    for (const name of names) await this.store.remove(ref.namespace, name);
    return names;
  }
}
