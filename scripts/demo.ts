/**
 * The demo, through the public HTTP API only: three fake-hardware hosts
 * enrolled and two of them provisioned, plus one host whose BMC is a real
 * Redfish endpoint (sushy-tools) enrolled and inspected out of band.
 * Re-running it is harmless: the same specs are applied again.
 */
import { request } from 'undici';

const API = process.env.METALFLOW_API_URL ?? 'http://127.0.0.1:8080';
const UI = process.env.TEMPORAL_UI_URL ?? 'http://127.0.0.1:8233';
const SUSHY = process.env.SUSHY_URL ?? 'http://127.0.0.1:8000';
const NS = 'demo';

interface Host {
  name: string;
  body: Record<string, unknown>;
  provision: boolean;
}

const image = {
  url: 'http://127.0.0.1/images/demo-ubuntu-24.04.qcow2',
  checksum: '9f0cc3d3b2f35dd1c8dc8a9c76c5c3f7b1a2f2c4a1d4e2b7a0c8f6e5d4c3b2a1',
  checksumType: 'sha256',
  format: 'qcow2',
};

const fakeHost = (i: number, provision: boolean): Host => ({
  name: `fake-${i}`,
  provision,
  body: {
    spec: {
      bmc: { address: `fake://fake-${i}`, credentialsName: `fake-${i}-bmc-secret` },
      bootMACAddress: `52:54:00:de:00:0${i}`,
      online: true,
      ...(provision ? { image } : {}),
    },
    credentials: { username: 'admin', password: 'password' },
    ...(provision ? { userData: `#cloud-config\nhostname: fake-${i}\n` } : {}),
  },
});

const redfishHost: Host = {
  name: 'redfish-0',
  provision: false,
  body: {
    spec: {
      bmc: {
        address: `redfish+${SUSHY}/redfish/v1/Systems/6d660000-0000-4000-8000-000000000001`,
        credentialsName: 'redfish-0-bmc-secret',
      },
      bootMACAddress: '52:54:00:6d:66:11',
      online: true,
      // Cleaning needs an agent ramdisk, which the demo does not have.
      automatedCleaningMode: 'disabled',
    },
    credentials: { username: 'admin', password: 'password' },
  },
};

const hosts = [fakeHost(0, true), fakeHost(1, true), fakeHost(2, false), redfishHost];

async function api(method: 'GET' | 'PUT', path: string, body?: unknown) {
  const res = await request(`${API}${path}`, {
    method,
    headers: body ? { 'content-type': 'application/json' } : {},
    body: body ? JSON.stringify(body) : undefined,
  });
  const json = (await res.body.json()) as any;
  if (res.statusCode >= 400) throw new Error(`${method} ${path}: ${res.statusCode} ${json.message}`);
  return json;
}

const target = (h: Host) => (h.provision ? 'provisioned' : 'available');

async function main(): Promise<void> {
  for (const h of hosts) {
    await api('PUT', `/v1/namespaces/${NS}/hosts/${h.name}`, h.body);
    console.log(`applied ${NS}/${h.name}`);
  }
  const deadline = Date.now() + 180_000;
  let last = '';
  for (;;) {
    const views = await Promise.all(hosts.map((h) => api('GET', `/v1/namespaces/${NS}/hosts/${h.name}`)));
    const table = views
      .map((v, i) => {
        const s = v.status;
        const hw = s.hardware?.cpu?.count ? `${s.hardware.cpu.count} CPUs, ${Math.round((s.hardware.ramMebibytes ?? 0) / 1024)} GiB` : '';
        return `  ${hosts[i]!.name.padEnd(10)} ${(s.provisioning.state || 'unmanaged').padEnd(13)} power=${s.poweredOn ? 'on ' : 'off'} ${s.operationalStatus.padEnd(5)} ${hw}${s.errorMessage ? ` error: ${s.errorMessage}` : ''}`;
      })
      .join('\n');
    if (table !== last) {
      console.log(`\n${new Date().toISOString()}\n${table}`);
      last = table;
    }
    const done = views.every((v, i) => v.status.provisioning.state === target(hosts[i]!) && v.status.poweredOn === true);
    if (done) break;
    if (Date.now() > deadline) throw new Error('hosts did not settle within 3 minutes; see the errors above and the Temporal UI');
    await new Promise((r) => setTimeout(r, 1000));
  }
  const query = encodeURIComponent(`WorkflowType = "hostWorkflow" AND MetalflowHostNamespace = "${NS}"`);
  console.log(`
Done: fake-0 and fake-1 are provisioned, fake-2 is available.
redfish-0 was registered against the sushy-tools Redfish BMC at ${SUSHY} and inspected out of band
(its CPU and RAM above come from Redfish). It stays available: provisioning a Redfish host needs an
Ironic agent ramdisk (IPA) booted over virtual media or PXE, which this demo does not ship.

  API:          ${API}   (OpenAPI: ${API}/openapi.json; try: curl -s ${API}/v1/hosts | jq)
  Temporal UI:  ${UI}/namespaces/default/workflows?query=${query}
`);
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
