/**
 * The generated CRDs, RBAC and Deployment on a real kube-apiserver (built
 * from k8s.io/kubernetes by scripts/kube-build.sh, run by scripts/kube.sh);
 * what the CRD rejects beyond its types (CEL rules, the admission policy) is
 * in crd-validation.test.ts. No controller runs here: these tests are about
 * what the API server accepts, rejects and prints.
 *
 *   METALFLOW_TEST_NO_STACK=1 npx vitest run test/k8s
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../config/env';
import { bareMetalHostSchema, hardwareDataSchema } from '../../k8s/generate-crds';
import { parseSites } from '../../config/sites';
import { kubectl, kubePaths } from './kube-harness';
import { baseSpec, bmh, fixture, useCrdNamespaces } from './crd-support';

const { ns: NS, apply } = useCrdNamespaces('crd');
const SA = 'system:serviceaccount:metalflow-system:metalflow-controller';

describe('generated CRDs', () => {
  it('--check passes on the committed files', () => {
    const r = spawnSync('npx', ['tsx', 'k8s/generate-crds.ts', '--check'], { cwd: REPO_ROOT, encoding: 'utf8' });
    expect(r.stderr.replace(/^npm warn.*\n/gm, '')).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('metal3.io_baremetalhosts.yaml up to date');
    expect(r.stdout).toContain('metal3.io_hardwaredata.yaml up to date');
  });

  it('--check fails when a file differs from the schema', () => {
    const dir = mkdtempSync(join(tmpdir(), 'crds-'));
    try {
      const gen = (...a: string[]) =>
        spawnSync('npx', ['tsx', 'k8s/generate-crds.ts', '--dir', dir, ...a], { cwd: REPO_ROOT, encoding: 'utf8' });
      expect(gen().status).toBe(0);
      expect(gen('--check').status).toBe(0);
      const file = join(dir, 'metal3.io_baremetalhosts.yaml');
      writeFileSync(file, readFileSync(file, 'utf8').replace('- UEFISecureBoot\n', ''));
      const r = gen('--check');
      expect(r.status).toBe(1);
      expect(r.stderr).toContain('metal3.io_baremetalhosts.yaml differs from model/host.ts');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the API server stores the generated schemas unchanged (structural, nothing dropped)', () => {
    const stored = (crd: string) =>
      JSON.parse(kubectl(['get', 'crd', crd, '-o', 'json']).stdout).spec.versions[0].schema.openAPIV3Schema;
    expect(stored('baremetalhosts.metal3.io')).toEqual(bareMetalHostSchema());
    expect(stored('hardwaredata.metal3.io')).toEqual(hardwareDataSchema());
    const crd = JSON.parse(kubectl(['get', 'crd', 'baremetalhosts.metal3.io', '-o', 'json']).stdout);
    expect(crd.spec.names).toMatchObject({ kind: 'BareMetalHost', plural: 'baremetalhosts', shortNames: ['bmh', 'bmhost'] });
    expect(crd.spec.versions[0].subresources).toEqual({ status: {} });
    const conditions = Object.fromEntries(crd.status.conditions.map((c: { type: string; status: string }) => [c.type, c.status]));
    expect(conditions).toMatchObject({ NamesAccepted: 'True', Established: 'True' });
    expect(conditions.NonStructuralSchema).toBeUndefined();
  });
});

describe('Metal3 user-guide manifests', () => {
  it('apply unchanged: a minimal host, then the same host with an image and user data', () => {
    let r = kubectl(['apply', '-n', NS, '-f', fixture('host-minimal.yaml')]);
    expect(r.stdout).toContain('baremetalhost.metal3.io/host-0 created');
    r = kubectl(['apply', '-n', NS, '-f', fixture('host-provisioned.yaml')]);
    expect(r.stdout).toContain('baremetalhost.metal3.io/host-0 configured');
    const host = JSON.parse(kubectl(['get', 'bmh', 'host-0', '-n', NS, '-o', 'json']).stdout);
    expect(host.spec).toEqual({
      online: true,
      bootMACAddress: '00:5c:52:31:3a:9c',
      bmc: { address: 'ipmi://192.168.122.1:6233', credentialsName: 'host-0-bmc-secret' },
      image: {
        url: 'http://172.22.0.1/images/ubuntu-24.04-server-cloudimg-amd64.qcow2',
        checksum: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
        checksumType: 'sha256',
        format: 'qcow2',
      },
      rootDeviceHints: { deviceName: '/dev/sda' },
      userData: { name: 'host-0-userdata' },
    });
  });

  it('a live ISO with online: false is accepted (no checksum needed)', () => {
    const r = kubectl(['apply', '-n', NS, '-f', fixture('host-live-iso.yaml')]);
    expect(r.stdout).toContain('baremetalhost.metal3.io/live-iso-booted-node created');
  });

  it('the live-ISO examples apply unchanged, including the one without a BMC', () => {
    let r = kubectl(['apply', '-n', NS, '-f', fixture('host-live-iso-guide.yaml')]);
    expect(r.stdout).toContain('baremetalhost.metal3.io/live-iso-booted-node');
    r = kubectl(['apply', '-n', NS, '-f', fixture('host-live-iso-no-bmc.yaml')]);
    expect(r.stdout).toContain('baremetalhost.metal3.io/live-iso-no-bmc created');
    const host = JSON.parse(kubectl(['get', 'bmh', 'live-iso-no-bmc', '-n', NS, '-o', 'json']).stdout);
    expect(host.spec).toEqual({ image: { url: 'http://1.2.3.4/image.iso', format: 'live-iso' }, online: true });
  });

  it('image.ociAuthSecretName and the credentials status fields are stored', () => {
    const r = apply(bmh('oci-0', { ...baseSpec('00:5c:52:31:3a:60'), image: { url: 'http://1.2.3.4/i.qcow2', checksum: 'a'.repeat(64), ociAuthSecretName: 'registry-auth' } }));
    expect(r.status).toBe(0);
    expect(kubectl(['get', 'bmh', 'oci-0', '-n', NS, '-o', 'jsonpath={.spec.image.ociAuthSecretName}']).stdout).toBe('registry-auth');
    const status = {
      operationalStatus: 'OK', errorMessage: '', errorCount: 0, poweredOn: false, hardwareProfile: 'unknown',
      operationHistory: { register: {}, inspect: {}, provision: {}, deprovision: {} },
      provisioning: { state: 'available', ID: 'x' },
      goodCredentials: { credentials: { name: 'host-0-bmc-secret', namespace: NS }, credentialsVersion: '1775' },
      triedCredentials: { credentials: { name: 'host-0-bmc-secret', namespace: NS }, credentialsVersion: '1775' },
    };
    kubectl(['patch', 'bmh', 'oci-0', '-n', NS, '--subresource=status', '--type=merge', '-p', JSON.stringify({ status })]);
    const stored = JSON.parse(kubectl(['get', 'bmh', 'oci-0', '-n', NS, '-o', 'json']).stdout).status;
    expect(stored.goodCredentials).toEqual(status.goodCredentials);
    expect(stored.triedCredentials).toEqual(status.triedCredentials);
    expect(stored.hardwareProfile).toBe('unknown');
  });

  it("applies (strict field validation) a manifest with every BareMetalHost spec field of BMO HEAD", () => {
    const spec = {
      ...baseSpec('00:5c:52:31:3a:62'),
      taints: [{ key: 'example.com/dedicated', value: 'db', effect: 'NoSchedule' }],
      raid: { softwareRAIDVolumes: [] },
      firmware: {},
      hardwareProfile: 'libvirt',
      rootDeviceHints: { deviceName: '/dev/vda' },
      bootMode: 'UEFI',
      consumerRef: { apiVersion: 'infrastructure.cluster.x-k8s.io/v1beta1', kind: 'Metal3Machine', name: 'm-0', namespace: NS },
      image: { url: 'oci://registry.example:5000/os/fedora:41', ociAuthSecretName: 'registry-auth', format: 'raw' },
      userData: { name: 'ud', namespace: NS },
      preprovisioningNetworkDataName: 'ipa-net',
      networkData: { name: 'nd' },
      metaData: { name: 'md' },
      description: 'every field',
      externallyProvisioned: false,
      automatedCleaningMode: 'metadata',
      customDeploy: { method: 'install_coreos' },
      architecture: 'x86_64',
      disablePowerOff: false,
      inspectionMode: 'agent',
      networkInterfaces: [{ macAddress: '52:54:00:00:00:01', switchPort: 'eth1/1' }],
    };
    const r = apply(bmh('every-field-0', spec), '--validate=strict');
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const stored = JSON.parse(kubectl(['get', 'bmh', 'every-field-0', '-n', NS, '-o', 'json']).stdout).spec;
    expect(stored).toEqual(spec);
  });

  it('status enums take every value of BMO HEAD, "" included', () => {
    expect(apply(bmh('status-enum-0', baseSpec('00:5c:52:31:3a:63'))).status).toBe(0);
    const base = { errorMessage: '', errorCount: 0, poweredOn: false, operationHistory: { register: {}, inspect: {}, provision: {}, deprovision: {} } };
    const cases: [string, string, string][] = [
      ['', '', ''],
      ['servicing', 'servicing error', 'provisioned'],
      ['discovered', '', 'unmanaged'],
      ['delayed', '', 'match profile'],
      ['OK', 'provisioned registration error', 'ready'],
      ['detached', 'detach error', 'externally provisioned'],
    ];
    for (const [operationalStatus, errorType, state] of cases) {
      const status = { ...base, operationalStatus, errorType, provisioning: { state, ID: '' } };
      const r = kubectl(['patch', 'bmh', 'status-enum-0', '-n', NS, '--subresource=status', '--type=merge', '-p', JSON.stringify({ status })], { check: false });
      expect(r.stderr, `${operationalStatus}/${errorType}/${state}`).toBe('');
      const stored = JSON.parse(kubectl(['get', 'bmh', 'status-enum-0', '-n', NS, '-o', 'json']).stdout).status;
      expect([stored.operationalStatus, stored.errorType, stored.provisioning.state]).toEqual([operationalStatus, errorType, state]);
    }
    const bad = kubectl(['patch', 'bmh', 'status-enum-0', '-n', NS, '--subresource=status', '--type=merge', '-p', JSON.stringify({ status: { provisioning: { state: 'matchprofile' } } })], { check: false });
    expect(bad.stderr).toMatch(/Unsupported value: "matchprofile"/);
  });

  it('disablePowerOff: true with online: false is rejected as Metal3 rejects it', () => {
    const r = apply(bmh('no-power-off-0', { ...baseSpec('00:5c:52:31:3a:61'), online: false, disablePowerOff: true }));
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('spec.disablePowerOff: Forbidden: disablePowerOff: true cannot be combined with online: false');
    expect(apply(bmh('no-power-off-1', { ...baseSpec('00:5c:52:31:3a:62'), online: true, disablePowerOff: true })).status).toBe(0);
  });

  it('HardwareData with inspection data is accepted as written', () => {
    kubectl(['apply', '-n', NS, '-f', fixture('hardwaredata.yaml')]);
    const hd = JSON.parse(kubectl(['get', 'hardwaredata', 'host-0', '-n', NS, '-o', 'json']).stdout);
    expect(hd.spec.hardware.cpu).toEqual({
      arch: 'x86_64',
      model: 'Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz',
      clockMegahertz: 2000.5,
      flags: ['sse4_2', 'avx2'],
      count: 64,
    });
    expect(hd.spec.hardware.storage[0].sizeBytes).toBe(960197124096);
  });
});

describe('kubectl get bmh', () => {
  it('prints the STATE CONSUMER ONLINE ERROR AGE columns, with status from the status subresource', () => {
    apply(bmh('columns-0', { ...baseSpec('00:5c:52:31:3a:10'), consumerRef: { name: 'machine-0', kind: 'Machine' } }));
    const status = {
      operationalStatus: 'error',
      errorType: 'registration error',
      errorMessage: 'BMC unreachable',
      errorCount: 1,
      poweredOn: false,
      operationHistory: { register: { start: '2026-01-01T00:00:00Z' }, inspect: {}, provision: {}, deprovision: {} },
      provisioning: { state: 'registering', ID: '' },
    };
    kubectl(['patch', 'bmh', 'columns-0', '-n', NS, '--subresource=status', '--type=merge', '-p', JSON.stringify({ status })]);

    const table = kubectl(['get', 'bmh', 'columns-0', '-n', NS]).stdout.trimEnd().split('\n');
    expect(table[0]!.split(/\s{2,}/)).toEqual(['NAME', 'STATE', 'CONSUMER', 'ONLINE', 'ERROR', 'AGE']);
    expect(table[1]).toMatch(/^columns-0\s+registering\s+machine-0\s+true\s+registration error\s+\d+s$/);

    const wide = kubectl(['get', 'bmhost', 'columns-0', '-n', NS, '-o', 'wide']).stdout.split('\n');
    expect(wide[0]!.split(/\s{2,}/)).toEqual(['NAME', 'STATUS', 'STATE', 'CONSUMER', 'BMC', 'ONLINE', 'ERROR', 'AGE']);
    expect(wide[1]).toContain('ipmi://192.168.122.1:6233');

    // A spec change through the status subresource is ignored, and vice versa.
    kubectl(['patch', 'bmh', 'columns-0', '-n', NS, '--subresource=status', '--type=merge', '-p', '{"spec":{"online":false}}']);
    kubectl(['patch', 'bmh', 'columns-0', '-n', NS, '--type=merge', '-p', '{"status":{"errorMessage":"x"}}']);
    const host = JSON.parse(kubectl(['get', 'bmh', 'columns-0', '-n', NS, '-o', 'json']).stdout);
    expect(host.spec.online).toBe(true);
    expect(host.status.errorMessage).toBe('BMC unreachable');
  });

  it('an invalid status value is rejected by the status schema', () => {
    apply(bmh('columns-1', baseSpec('00:5c:52:31:3a:11')));
    const r = kubectl(
      ['patch', 'bmh', 'columns-1', '-n', NS, '--subresource=status', '--type=merge', '-p',
        JSON.stringify({ status: { operationalStatus: 'sideways', errorMessage: '', errorCount: 0, poweredOn: false,
          operationHistory: { register: {}, inspect: {}, provision: {}, deprovision: {} }, provisioning: { state: '', ID: '' } } })],
      { check: false },
    );
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('status.operationalStatus: Unsupported value: "sideways"');
  });
});

describe('RBAC and Deployment', () => {
  const can = (verb: string, resource: string, ns = NS): string =>
    kubectl(['auth', 'can-i', verb, resource, '-n', ns, `--as=${SA}`], { check: false }).stdout.trim();

  it('the controller service account has exactly what it needs', () => {
    for (const verb of ['get', 'list', 'watch', 'update', 'patch']) expect(can(verb, 'baremetalhosts.metal3.io'), verb).toBe('yes');
    for (const verb of ['update', 'patch']) {
      expect(kubectl(['auth', 'can-i', verb, 'baremetalhosts.metal3.io', '--subresource=status', '-n', NS, `--as=${SA}`], { check: false }).stdout.trim()).toBe('yes');
      expect(kubectl(['auth', 'can-i', verb, 'baremetalhosts.metal3.io', '--subresource=finalizers', '-n', NS, `--as=${SA}`], { check: false }).stdout.trim()).toBe('yes');
    }
    for (const verb of ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete']) expect(can(verb, 'hardwaredata.metal3.io'), verb).toBe('yes');
    // Secrets only where hosts live (rbac.yaml binds the reader in metal3), see the next test.
    // patch: only to release Metal3's finalizer on a taken-over host's Secrets (k8s/controller/bmo-release.ts).
    for (const verb of ['get', 'list', 'watch', 'patch']) expect(can(verb, 'secrets', 'metal3'), verb).toBe('yes');
    for (const verb of ['create', 'patch']) {
      expect(can(verb, 'events'), verb).toBe('yes');
      expect(can(verb, 'events.events.k8s.io'), verb).toBe('yes');
    }
    for (const verb of ['get', 'create', 'update']) expect(can(verb, 'leases.coordination.k8s.io', 'metalflow-system'), verb).toBe('yes');
    // Metal3 IPAM (k8s/controller/ipam.ts): finalizers and status on pools and claims, IPAddress objects made and removed.
    for (const kind of ['ippools', 'ipclaims']) {
      for (const verb of ['get', 'list', 'watch', 'patch']) expect(can(verb, `${kind}.ipam.metal3.io`), `${verb} ${kind}`).toBe('yes');
      expect(kubectl(['auth', 'can-i', 'patch', `${kind}.ipam.metal3.io`, '--subresource=status', '-n', NS, `--as=${SA}`], { check: false }).stdout.trim()).toBe('yes');
    }
    for (const verb of ['get', 'create', 'patch', 'delete']) expect(can(verb, 'ipaddresses.ipam.metal3.io'), verb).toBe('yes');
    // The worker (same service account) creates and deletes the IPClaim of a host's spec.dhcp.ipPool.
    for (const verb of ['create', 'delete']) expect(can(verb, 'ipclaims.ipam.metal3.io'), verb).toBe('yes');
  });

  it('and nothing more', () => {
    expect(can('delete', 'baremetalhosts.metal3.io')).toBe('no');
    expect(can('create', 'baremetalhosts.metal3.io')).toBe('no');
    for (const verb of ['create', 'update', 'delete']) expect(can(verb, 'secrets', 'metal3'), verb).toBe('no');
    // No cluster-wide Secret read: a namespace without a RoleBinding (and every namespace at once) is closed.
    for (const verb of ['get', 'list', 'watch']) expect(can(verb, 'secrets'), verb).toBe('no');
    expect(kubectl(['auth', 'can-i', 'list', 'secrets', '--all-namespaces', `--as=${SA}`], { check: false }).stdout.trim()).toBe('no');
    // Leases elsewhere are read only (Metal3's operator's, k8s/controller/bmo-guard.ts), never written.
    for (const verb of ['get', 'list']) expect(can(verb, 'leases.coordination.k8s.io', NS), `${verb} leases`).toBe('yes');
    for (const verb of ['create', 'update', 'patch', 'delete']) expect(can(verb, 'leases.coordination.k8s.io', NS), `${verb} leases`).toBe('no');
    expect(can('delete', 'leases.coordination.k8s.io', 'metalflow-system')).toBe('no');
    expect(can('get', 'configmaps')).toBe('no');
    expect(can('list', 'pods')).toBe('no');
    expect(can('delete', 'events')).toBe('no');
    for (const verb of ['create', 'delete']) expect(can(verb, 'ippools.ipam.metal3.io'), `${verb} ippools`).toBe('no');
    expect(can('update', 'ipclaims.ipam.metal3.io')).toBe('no');
  });

  it('a token for the service account really works against the API (TokenRequest, RBAC)', () => {
    const token = kubectl(['create', 'token', 'metalflow-controller', '-n', 'metalflow-system', '--duration=10m']).stdout.trim();
    const server = JSON.parse(kubectl(['config', 'view', '--raw', '-o', 'json']).stdout).clusters[0].cluster.server as string;
    const { kubectl: bin } = kubePaths();
    const asSa = (...args: string[]) =>
      spawnSync(bin, ['--server', server, '--token', token, '--insecure-skip-tls-verify', '--kubeconfig', '/dev/null', ...args], { encoding: 'utf8' });
    expect(asSa('get', 'bmh', '-n', NS, '-o', 'name').stdout).toContain('baremetalhost.metal3.io/host-0');
    const denied = asSa('delete', 'bmh', 'host-0', '-n', NS, '--dry-run=server');
    expect(denied.status).not.toBe(0);
    expect(denied.stderr).toContain('forbidden');
  });

  it('deployment.yaml is a valid Deployment for that service account (server dry run)', () => {
    const r = kubectl(['apply', '--dry-run=server', '-o', 'json', '-f', join(REPO_ROOT, 'k8s', 'deployment.yaml')]);
    const dep = JSON.parse(r.stdout);
    expect(dep.metadata.namespace).toBe('metalflow-system');
    const pod = dep.spec.template.spec;
    expect(pod.serviceAccountName).toBe('metalflow-controller');
    expect(pod.containers[0].image).toBe('metalflow:dev');
    expect(pod.containers[0].command).toEqual(['node', '--import', 'tsx', 'k8s/controller/main.ts']);
    expect(pod.containers[0].env.map((e: { name: string }) => e.name)).toContain('TEMPORAL_ADDRESS');
  });

  it('worker.yaml is a valid Deployment of the worker, with the controller\'s Temporal settings and service account (server dry run)', () => {
    const manifest = (file: string) => JSON.parse(kubectl(['apply', '--dry-run=server', '-o', 'json', '-f', join(REPO_ROOT, 'k8s', file)]).stdout);
    const worker = manifest('worker.yaml');
    const controller = manifest('deployment.yaml');
    expect(worker.metadata.namespace).toBe('metalflow-system');
    const pod = worker.spec.template.spec;
    expect(pod.serviceAccountName).toBe('metalflow-controller');
    expect(pod.containers[0].command).toEqual(['node', '--import', 'tsx', 'workers/main.ts']);
    const env = (dep: typeof worker) => Object.fromEntries((dep.spec.template.spec.containers[0].env as { name: string; value?: string }[]).map((e) => [e.name, e.value]));
    for (const name of ['TEMPORAL_ADDRESS', 'TEMPORAL_NAMESPACE', 'METALFLOW_TASK_QUEUE', 'IRONIC_URL']) expect(env(worker)[name], name).toBe(env(controller)[name]);
    // In-cluster: the service account's token, no kubeconfig.
    expect(env(worker).METALFLOW_KUBECONFIG).toBeUndefined();
  });

  it('site-worker.yaml is a valid sites file and Deployment of one site worker: its --site is in the file, every credential file is on a mounted Secret, no service account token (server dry run)', () => {
    type Mount = { name: string; mountPath: string };
    type Volume = { name: string; secret?: { secretName: string }; configMap?: { name: string } };
    const list = JSON.parse(kubectl(['apply', '--dry-run=server', '-o', 'json', '-f', join(REPO_ROOT, 'k8s', 'site-worker.yaml')]).stdout);
    const items = list.items as { kind: string; metadata: { name: string; namespace: string }; data?: Record<string, string>; spec?: { template: { spec: Record<string, unknown> & { containers: { command: string[]; env: { name: string; value?: string }[]; volumeMounts: Mount[] }[]; volumes: Volume[] } } } }[];
    const configMap = items.find((i) => i.kind === 'ConfigMap')!;
    const dep = items.find((i) => i.kind === 'Deployment')!;
    expect(dep.metadata.namespace).toBe('metalflow-system');
    const pod = dep.spec!.template.spec;
    const container = pod.containers[0]!;
    const env = Object.fromEntries(container.env.map((e) => [e.name, e.value]));
    const siteName = container.command[container.command.indexOf('--site') + 1]!;
    expect(container.command.slice(0, 4)).toEqual(['node', '--import', 'tsx', 'workers/main.ts']);
    // The file parses as every process reads it, with the Deployment's central queue.
    const sites = parseSites(configMap.data!['sites.json']!, { name: 'default', ironic: { url: 'http://unused' }, taskQueue: env.METALFLOW_TASK_QUEUE! });
    const site = sites.get(siteName);
    if (!site || site.name === 'default') throw new Error(`--site ${siteName} is not a site of the ConfigMap's sites file`);
    expect(env.METALFLOW_SITES_FILE).toBe(join(mountOf(container.volumeMounts, pod.volumes, { configMap: configMap.metadata.name }), 'sites.json'));
    const secretDirs = container.volumeMounts.filter((m) => pod.volumes.find((v) => v.name === m.name)?.secret).map((m) => m.mountPath);
    const files = [site.ironic.caFile, site.ironic.clientCertFile, site.ironic.clientKeyFile, site.ironic.passwordFile, env.TEMPORAL_TLS_CLIENT_CERT_PATH, env.TEMPORAL_TLS_CLIENT_KEY_PATH, env.TEMPORAL_TLS_SERVER_CA_CERT_PATH, env.METALFLOW_PAYLOAD_KEYS_FILE];
    for (const file of files) expect(secretDirs.some((dir) => file?.startsWith(`${dir}/`)), String(file)).toBe(true);
    // It connects out over mTLS, and the site's cluster gives it no API token.
    expect(env.TEMPORAL_TLS_CLIENT_KEY_PATH).toBeTruthy();
    expect(pod.automountServiceAccountToken).toBe(false);
  });
});

/** Where the volume with that source is mounted in the container. */
function mountOf(mounts: { name: string; mountPath: string }[], volumes: { name: string; configMap?: { name: string } }[], source: { configMap: string }): string {
  const volume = volumes.find((v) => v.configMap?.name === source.configMap);
  const mount = mounts.find((m) => m.name === volume?.name);
  if (!mount) throw new Error(`ConfigMap ${source.configMap} is not mounted`);
  return mount.mountPath;
}
