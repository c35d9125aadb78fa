/**
 * Generates the metalflow CRDs (Metal3's `BareMetalHost` and `HardwareData`,
 * group metal3.io, version v1alpha1) and the admission policy that goes with
 * them from the TypeBox schemas in model/host.ts, the single source of the
 * host model. Nothing here restates a field: the schema is converted.
 *
 *   npx tsx k8s/generate-crds.ts           write k8s/crds/*.yaml
 *   npx tsx k8s/generate-crds.ts --check   exit 1 if the committed files differ
 *   ... [--dir DIR]                        write or check DIR instead of k8s/crds
 *
 * TypeBox JSON Schema → Kubernetes structural schema:
 *   - `$id`, `$schema` and TypeBox's symbol keys ([Kind], [OptionalKind]) are dropped;
 *   - `additionalProperties: false` is omitted: a structural schema prunes (and
 *     `kubectl apply` with server-side field validation rejects) unknown fields;
 *   - an object with no properties that allows any (`passThrough`) becomes
 *     `x-kubernetes-preserve-unknown-fields: true`;
 *   - a union of literals (`anyOf` of `const`) becomes `enum`;
 *   - a union of one schema and null becomes that schema with `nullable: true`;
 *   - integers get `format: int64`, as Go's int64 fields do in Metal3's CRDs;
 *   - any other keyword is an error, so a schema change this converter cannot
 *     express fails here instead of silently loosening the CRD.
 * What the schema cannot say is added as CEL rules (`x-kubernetes-validations`)
 * and, where CEL on a CRD cannot see what it needs, as a ValidatingAdmissionPolicy
 * (also CEL, evaluated by the API server); see RULES and secretNamespacePolicy().
 *
 * Layout: crd-gen/structural.ts converts, crd-gen/objects.ts builds the CRDs and
 * the policy, crd-gen/yaml.ts writes them; this file checks or writes the files.
 */
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bareMetalHostCrd, GROUP, hardwareDataCrd, secretNamespacePolicy } from './crd-gen/objects';
import { toYaml } from './crd-gen/yaml';
import { hostRemediationCrd } from './crd-gen/remediation-objects';
import { HOST_REMEDIATION } from '../model/host-remediation';
import { ipAddressCrd, ipClaimCrd, ipPoolCrd } from './crd-gen/ipam-objects';
import { IPAM } from '../model/ipam';
import { firmwareSchemaCrd, hostFirmwareComponentsCrd, hostFirmwareSettingsCrd } from './crd-gen/firmware-objects';
import { COMPONENTS } from '../model/firmware-components';
import { FIRMWARE } from '../model/firmware-settings';
import { hostUpdatePolicyCrd } from './crd-gen/update-policy-objects';
import { UPDATE_POLICY } from '../model/host-update-policy';

export * from './crd-gen/objects';
export { toStructural, type JSONSchemaProps, type ValidationRule } from './crd-gen/structural';
export { toYaml } from './crd-gen/yaml';

const K8S_DIR = dirname(fileURLToPath(import.meta.url));
export const CRD_DIR = join(K8S_DIR, 'crds');

// ------------------------------------------------------------------ main ----

export function generatedFiles(dir = CRD_DIR): Record<string, string> {
  return {
    [join(dir, `${GROUP}_baremetalhosts.yaml`)]: toYaml([bareMetalHostCrd()]),
    [join(dir, `${GROUP}_hardwaredata.yaml`)]: toYaml([hardwareDataCrd()]),
    [join(dir, `${GROUP}_baremetalhosts_policy.yaml`)]: toYaml(secretNamespacePolicy()),
    [join(dir, `${FIRMWARE.group}_${FIRMWARE.settings.plural}.yaml`)]: toYaml([hostFirmwareSettingsCrd()]),
    [join(dir, `${FIRMWARE.group}_${FIRMWARE.schema.plural}.yaml`)]: toYaml([firmwareSchemaCrd()]),
    [join(dir, `${FIRMWARE.group}_${COMPONENTS.plural}.yaml`)]: toYaml([hostFirmwareComponentsCrd()]),
    [join(dir, `${UPDATE_POLICY.group}_${UPDATE_POLICY.plural}.yaml`)]: toYaml([hostUpdatePolicyCrd()]),
    [join(dir, `${HOST_REMEDIATION.group}_${HOST_REMEDIATION.plural}.yaml`)]: toYaml([hostRemediationCrd()]),
    // Metal3 IP Address Manager's, under its file names (model/ipam.ts).
    [join(dir, `${IPAM.group}_ippools.yaml`)]: toYaml([ipPoolCrd()]),
    [join(dir, `${IPAM.group}_ipclaims.yaml`)]: toYaml([ipClaimCrd()]),
    [join(dir, `${IPAM.group}_ipaddresses.yaml`)]: toYaml([ipAddressCrd()]),
  };
}

function main(argv: string[]): number {
  let check = false;
  let dir = CRD_DIR;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--check') check = true;
    else if (arg === '--dir' && argv[i + 1] !== undefined) dir = resolve(argv[++i]!);
    else {
      console.error(`generate-crds: unexpected argument ${arg} (usage: generate-crds.ts [--check] [--dir DIR])`);
      return 2;
    }
  }
  const repo = join(K8S_DIR, '..');
  let stale = 0;
  for (const [file, text] of Object.entries(generatedFiles(dir))) {
    const rel = relative(repo, file);
    let current: string | undefined;
    try {
      current = readFileSync(file, 'utf8');
    } catch {
      current = undefined;
    }
    if (current === text) {
      console.log(`generate-crds: ${rel} up to date`);
      continue;
    }
    if (check) {
      console.error(`generate-crds: ${rel} ${current === undefined ? 'is missing' : 'differs from model/host.ts'}; run: npx tsx k8s/generate-crds.ts`);
      stale++;
    } else {
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, text);
      console.log(`generate-crds: wrote ${rel}`);
    }
  }
  return stale > 0 ? 1 : 0;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  process.exitCode = main(process.argv.slice(2));
}
