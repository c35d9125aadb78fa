/**
 * What the metal3_* counters need to know of a host besides its status: whether the controller's
 * Secret watch holds its credentials Secret (BMO's credentials_missing) and whether its delete waits
 * for a detached annotation with deleteAction "delay" (BMO's delete_delayed_for_detached).
 */
import { parseAnnotations } from './annotations';
import type { HostFacts } from './metrics';
import type { KubeObject } from './informer';
import { SITE_LABEL } from '../../model/site';

export function credentialsName(host: KubeObject & { spec?: unknown }): string | undefined {
  const spec = host.spec as { bmc?: { credentialsName?: unknown } } | undefined;
  return typeof spec?.bmc?.credentialsName === 'string' ? spec.bmc.credentialsName : undefined;
}

/**
 * `credentialSites`: sites that hold their hosts' BMC credentials themselves (docs/sites.md): their hosts' Secrets
 * are not in this cluster, so they are neither looked for nor counted missing (the site worker reports a missing one).
 */
export function hostFacts(host: KubeObject & { spec?: unknown }, hasSecret: (namespace: string, name: string) => boolean, credentialSites: readonly string[] = []): HostFacts {
  const atSite = credentialSites.includes(host.metadata.labels?.[SITE_LABEL] ?? '');
  const name = atSite ? undefined : credentialsName(host);
  const facts: HostFacts = {};
  if (name) facts.credentials = { name, found: hasSecret(host.metadata.namespace ?? '', name) };
  if (host.metadata.deletionTimestamp && parseAnnotations(host.metadata.annotations).value.detached?.deleteAction === 'delay') facts.deleteDelayed = true;
  return facts;
}
