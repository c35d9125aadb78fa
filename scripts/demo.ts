/**
 * The demo, through the public HTTP API only: three fake-hardware hosts
 * enrolled and two of them provisioned, plus one host whose BMC is a real
 * Redfish endpoint (sushy-tools) enrolled and inspected out of band. As root,
 * one more Redfish host, redfish-agent, provisioned through the real agent
 * path (scripts/lib/demo-agent.sh): a real ironic-python-agent booted from
 * virtual media writes the image onto a loop device. Then two
 * hosts on the `direct` provisioner (no Ironic): one behind sushy's Redfish,
 * one behind an IPMI simulator (ipmi_sim, scripts/ipmi-sim.sh), whose power
 * is switched off and on again through spec.online.
 * Re-running it is harmless: the same specs are applied again.
 */
import { request } from 'undici';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { hostStateLinks } from '../model/temporal-ui-links';

const API = process.env.METALFLOW_API_URL ?? 'http://127.0.0.1:8080';
// scripts/demo.sh makes an admin token for the demo (METALFLOW_API_TOKEN_FILE); the API needs one.
const TOKEN_FILE = process.env.METALFLOW_API_TOKEN_FILE;
const TOKEN = process.env.METALFLOW_API_TOKEN ?? (TOKEN_FILE ? readFileSync(TOKEN_FILE, 'utf8').trim() : undefined);
const UI = process.env.TEMPORAL_UI_URL ?? 'http://127.0.0.1:8233';
const SUSHY = process.env.SUSHY_URL ?? 'http://127.0.0.1:8000';
const IPMI_PORT = process.env.IPMI_SIM_PORT ?? '6623';
const NS = 'demo';
/** Set by scripts/demo.sh when the demo site's dnsmasq runs (root): the fake hosts take pool addresses reserved there. */
const DHCP_NET = process.env.METALFLOW_DEMO_DHCP_NET;
const POOL = 'demo-pool';
/** The site's client namespace, where udhcpc asks with each host's MAC. */
const CLIENT_NETNS = `${process.env.METALFLOW_DEMO_DHCP_NETNS ?? 'mf-dhcp-demo'}-c`;

interface Host {
  name: string;
  body: { spec: Record<string, unknown> } & Record<string, unknown>;
  provision: boolean;
  /** On the direct provisioner: its power is toggled after it settles. */
  direct?: boolean;
}

/** scripts/demo.sh serves the image from a local origin, with the worker's image cache in front (docs/images.md). */
const ORIGIN_LOG = process.env.METALFLOW_DEMO_ORIGIN_LOG;
const image = {
  url: process.env.METALFLOW_DEMO_IMAGE_URL ?? 'http://127.0.0.1/images/demo-ubuntu-24.04.qcow2',
  checksum: process.env.METALFLOW_DEMO_IMAGE_SHA256 ?? '9f0cc3d3b2f35dd1c8dc8a9c76c5c3f7b1a2f2c4a1d4e2b7a0c8f6e5d4c3b2a1',
  checksumType: 'sha256',
  format: 'qcow2',
};

/** How often the origin served the image (its access log): once for every host, thanks to the cache. */
function showImageDownloads(): void {
  if (!ORIGIN_LOG || !existsSync(ORIGIN_LOG)) return;
  const path = new URL(image.url).pathname;
  const gets = readFileSync(ORIGIN_LOG, 'utf8').split('\n').filter((l) => l.includes(`"GET ${path} `) && / 200 /.test(l)).length;
  const provisioned = hosts.filter((h) => h.provision && h.body.spec.image === image).length;
  console.log(`\nImages: ${provisioned} hosts provisioned with ${image.url} through the worker's image cache (${process.env.METALFLOW_IMAGE_CACHE_DIR ?? 'off'}); the origin served it ${gets} time(s) over this stack's life.`);
}

const fakeHost = (i: number, provision: boolean): Host => ({
  name: `fake-${i}`,
  provision,
  body: {
    spec: {
      bmc: { address: `fake://fake-${i}`, credentialsName: `fake-${i}-bmc-secret` },
      bootMACAddress: `52:54:00:de:00:0${i}`,
      online: true,
      ...(provision ? { image } : {}),
      ...(DHCP_NET ? { dhcp: { site: 'demo', ipPool: { name: POOL }, tags: ['provisioning'] } } : {}),
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

/**
 * Set by scripts/demo.sh (scripts/lib/demo-agent.sh) when the agent path runs: a sushy system whose changes
 * go to the agent launcher, the real image the agent writes, and the file behind the loop device it writes to.
 */
const AGENT_SYSTEM = process.env.METALFLOW_DEMO_AGENT_SYSTEM;
const AGENT_DISK = process.env.METALFLOW_DEMO_AGENT_DISK;
const AGENT_SKIPPED = process.env.METALFLOW_DEMO_AGENT_SKIPPED;
const agentHost: Host | undefined = AGENT_SYSTEM
  ? {
      name: 'redfish-agent',
      provision: true,
      body: {
        spec: {
          // Virtual media: Ironic boots the agent from an ISO it builds and inserts into the system's CD.
          bmc: { address: `redfish-virtualmedia+${SUSHY}/redfish/v1/Systems/${AGENT_SYSTEM}`, credentialsName: 'redfish-agent-bmc-secret' },
          bootMACAddress: process.env.METALFLOW_DEMO_AGENT_MAC,
          bootMode: 'UEFI',
          online: true,
          // One boot of the agent, the deploy's: no cleaning before it (Metal3's default would boot it once more).
          automatedCleaningMode: 'disabled',
          // The loop device's serial is its backing file's name; the default hint (/dev/sda) names no disk it has.
          rootDeviceHints: { serialNumber: 'disk0' },
          image: {
            url: process.env.METALFLOW_DEMO_AGENT_IMAGE_URL,
            checksum: process.env.METALFLOW_DEMO_AGENT_IMAGE_SHA256,
            checksumType: 'sha256',
            format: 'qcow2',
          },
        },
        credentials: { username: 'admin', password: 'password' },
        userData: '#cloud-config\nhostname: redfish-agent\n',
      },
    }
  : undefined;

/** metalflow speaks to these BMCs itself: no Ironic node, BMC pre-flight, Redfish inventory, BMC power. */
const directHost = (name: string, address: string): Host => ({
  name,
  provision: false,
  direct: true,
  body: {
    spec: { bmc: { address, credentialsName: `${name}-bmc-secret` }, online: true, provisioner: 'direct' },
    credentials: { username: 'admin', password: 'password' },
  },
});

const directHosts = [
  directHost('redfish-direct', `redfish-virtualmedia+${SUSHY}/redfish/v1/Systems/6d660000-0000-4000-8000-000000000002`),
  directHost('ipmi-direct', `ipmi://127.0.0.1:${IPMI_PORT}`),
];

const hosts = [fakeHost(0, true), fakeHost(1, true), fakeHost(2, false), redfishHost, ...(agentHost ? [agentHost] : []), ...directHosts];

/** The trace of each PUT (its answer's x-trace-id), when the API traces (docs/observability.md). */
const traceOf = new Map<string, string>();

async function api(method: 'GET' | 'PUT', path: string, body?: unknown) {
  const res = await request(`${API}${path}`, {
    method,
    headers: { ...(body ? { 'content-type': 'application/json' } : {}), ...(TOKEN ? { authorization: `Bearer ${TOKEN}` } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const json = (await res.body.json()) as any;
  if (res.statusCode >= 400) throw new Error(`${method} ${path}: ${res.statusCode} ${json.message}`);
  const trace = res.headers['x-trace-id'];
  if (method === 'PUT' && typeof trace === 'string') traceOf.set(path, trace);
  return json;
}

const target = (h: Host) => (h.provision ? 'provisioned' : 'available');

type View = any;

const row = (h: Host, v: View): string => {
  const s = v.status;
  const hw = s.hardware?.cpu?.count ? `${s.hardware.cpu.count} CPUs, ${Math.round((s.hardware.ramMebibytes ?? 0) / 1024)} GiB` : '';
  const via = h.direct ? 'direct' : 'ironic';
  const ip = s.dhcp?.reservedAddress ? ` ip=${s.dhcp.reservedAddress}` : '';
  return `  ${h.name.padEnd(14)} ${via.padEnd(6)} ${(s.provisioning.state || 'unmanaged').padEnd(13)} power=${s.poweredOn ? 'on ' : 'off'} ${s.operationalStatus.padEnd(5)} ${hw}${ip}${s.errorMessage ? ` error: ${s.errorMessage}` : ''}`;
};

let last = '';

/** Prints the hosts' states whenever they change, until `done` holds for every host. */
async function settle(what: string, done: (h: Host, v: View) => boolean, timeoutMs: number): Promise<View[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const views = await Promise.all(hosts.map((h) => api('GET', `/v1/namespaces/${NS}/hosts/${h.name}`)));
    const table = views.map((v, i) => row(hosts[i]!, v)).join('\n');
    if (table !== last) {
      console.log(`\n${new Date().toISOString()}\n${table}`);
      last = table;
    }
    // A host has settled when it shows the target and no operation is still running for it.
    if (views.every((v, i) => !v.currentOperation && done(hosts[i]!, v))) return views;
    if (Date.now() > deadline) throw new Error(`${what}: not reached within ${timeoutMs / 1000} s; see the errors above and the Temporal UI`);
    await new Promise((r) => setTimeout(r, 1000));
  }
}

/** Power of the direct hosts through spec.online; each change is a `power` child run of the host in the UI. */
async function setDirectPower(online: boolean): Promise<void> {
  console.log(`\n-> direct hosts: spec.online = ${online}`);
  for (const h of directHosts) {
    await api('PUT', `/v1/namespaces/${NS}/hosts/${h.name}`, { spec: { ...h.body.spec, online } });
  }
  await settle(`direct hosts powered ${online ? 'on' : 'off'}`, (h, v) => !h.direct || v.status.poweredOn === online, 120_000);
}

/**
 * Each fake host's boot MAC asks the demo site's dnsmasq for a lease (busybox udhcpc in the site's
 * client namespace, scripts/dnsmasq.sh) and gets the address its IPPool claim reserved; the host's
 * status.dhcp then shows the lease.
 */
async function showDhcp(): Promise<void> {
  console.log(`\nDHCP: the fake hosts' addresses come from IPPool ${NS}/${POOL} and are reserved in the demo site's dnsmasq:`);
  for (const h of hosts.filter((x) => x.name.startsWith('fake-'))) {
    const mac = h.body.spec.bootMACAddress as string;
    execFileSync('ip', ['-n', CLIENT_NETNS, 'link', 'set', 'mfdhcp1', 'address', mac]);
    // udhcpc reports the lease on stderr.
    const asked = spawnSync('ip', ['netns', 'exec', CLIENT_NETNS, 'busybox', 'udhcpc', '-i', 'mfdhcp1', '-f', '-q', '-n', '-t', '5', '-T', '1', '-s', '/bin/true'], { encoding: 'utf8' });
    const got = /lease of (\S+) obtained/.exec(`${asked.stdout}${asked.stderr}`)?.[1] ?? 'none';
    const deadline = Date.now() + 30_000;
    let v = await api('GET', `/v1/namespaces/${NS}/hosts/${h.name}`);
    while (got !== 'none' && v.status.dhcp?.address !== got && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 1000));
      v = await api('GET', `/v1/namespaces/${NS}/hosts/${h.name}`);
    }
    console.log(`  ${h.name.padEnd(8)} MAC ${mac}: udhcpc got ${got}; status.dhcp ${JSON.stringify(v.status.dhcp ?? null)}`);
  }
}

async function main(): Promise<void> {
  if (DHCP_NET) {
    await api('PUT', `/v1/namespaces/${NS}/ippools/${POOL}`, {
      spec: { namePrefix: POOL, pools: [{ start: `${DHCP_NET}.20`, end: `${DHCP_NET}.29` }], prefix: 24, gateway: `${DHCP_NET}.1`, dnsServers: [`${DHCP_NET}.1`] },
    });
    console.log(`applied IPPool ${NS}/${POOL} (${DHCP_NET}.20-29)`);
  }
  for (const h of hosts) {
    await api('PUT', `/v1/namespaces/${NS}/hosts/${h.name}`, h.body);
    console.log(`applied ${NS}/${h.name}`);
  }
  await settle(
    'hosts settled',
    (h, v) => v.status.provisioning.state === target(h) && v.status.poweredOn === true,
    // The agent's deploy: sushy's power delays (up to 11 s each, three changes), the agent's boot and its write.
    agentHost ? 600_000 : 180_000,
  );
  await setDirectPower(false);
  await setDirectPower(true);
  if (DHCP_NET) await showDhcp();
  showImageDownloads();

  console.log('\nWhat the direct hosts did (each line is an operation in the host run):');
  for (const h of directHosts) {
    const v = await api('GET', `/v1/namespaces/${NS}/hosts/${h.name}`);
    console.log(`  ${h.name} (${(h.body.spec.bmc as { address: string }).address}), Ironic node: ${v.status.provisioning.ID || 'none'}`);
    // An operation runs inside the host workflow: no workflow of its own.
    const ops = v.operations as { seq: number; kind: string; outcome: string; note?: string }[];
    // Re-runs of the demo add power runs; the first three steps and the latest few tell the story.
    const shown = ops.length > 10 ? [...ops.slice(0, 3), ...ops.slice(-6)] : ops;
    for (const op of shown) {
      if (ops.length > 10 && op === ops.at(-6)) console.log(`    … ${ops.length - 9} more runs (GET /v1/namespaces/${NS}/hosts/${h.name}/history)`);
      console.log(`    ${`${op.seq}-${op.kind} (in the host's run)`.padEnd(34)} ${op.kind.padEnd(8)} ${op.outcome}${op.note ? ` (${op.note})` : ''}`);
    }
  }

  const query = encodeURIComponent(`WorkflowType = "hostWorkflow" AND MetalflowHostNamespace = "${NS}"`);
  console.log(`
Done: fake-0${agentHost ? ', fake-1 and redfish-agent are' : ' and fake-1 are'} provisioned, fake-2 is available.
redfish-0 was registered against the sushy-tools Redfish BMC at ${SUSHY} and inspected out of band
(its CPU and RAM above come from Redfish); it stays available (no image in its spec).
${agentHost ? `redfish-agent, another sushy system, was provisioned through the real agent path: Ironic built an ISO
with the agent's kernel command line and inserted it into the system's virtual CD, the agent launcher
started ironic-python-agent when sushy said the system was on and booting it, and the agent wrote the
image and a config drive onto a loop device (below).` : `redfish-agent, provisioned through the real agent path (ironic-python-agent on a loop device), was skipped:
${AGENT_SKIPPED ?? 'the demo was not started by scripts/demo.sh'}.`}
redfish-direct (sushy) and ipmi-direct (ipmi_sim on 127.0.0.1:${IPMI_PORT}) use the direct provisioner: no
Ironic node; enrolment is a BMC pre-flight, redfish-direct's hardware was read from Redfish (IPMI has
no inventory), and their power followed spec.online: on -> off -> on, each change a power operation
in the host's own run (its activities carry <seq>-power as their summary).

  API:          ${API}   (OpenAPI: ${API}/openapi.json; try: curl -s -H "Authorization: Bearer $(cat ${TOKEN_FILE ?? '<token file>'})" ${API}/v1/hosts | jq)
  Temporal UI:  ${UI}/namespaces/default/workflows?query=${query}
`);
  if (agentHost) showAgentDisk();
  showStateLinks();
  showTrace();
}

/** What the agent wrote onto redfish-agent's disk: its partitions and the config drive, and how to look at them. */
function showAgentDisk(): void {
  if (!AGENT_DISK || !existsSync(AGENT_DISK)) return;
  const dir = process.env.METALFLOW_DEMO_AGENT_DIR ?? '.';
  const run = (cmd: string, args: string[]) => execFileSync(cmd, args, { encoding: 'utf8' });
  console.log(`The disk redfish-agent's agent wrote: ${AGENT_DISK} (8 GiB sparse file; the agent's log is ipa.log beside it)`);
  console.log(`  partx -s ${AGENT_DISK}`);
  console.log(run('partx', ['-s', AGENT_DISK]).replace(/^/gm, '    ').trimEnd());
  // The agent puts the config drive in a partition of its own after the image's: an ISO 9660 volume config-2.
  const parts = run('partx', ['-g', '-o', 'NR,START,SECTORS', AGENT_DISK]).trim().split('\n').map((l) => l.trim().split(/\s+/).map(Number));
  const last = parts.at(-1);
  if (!last || parts.length < 2) return;
  const [nr, start, sectors] = last as [number, number, number];
  const iso = join(dir, 'config-drive.iso');
  mkdirSync(dir, { recursive: true });
  execFileSync('dd', [`if=${AGENT_DISK}`, `of=${iso}`, 'bs=512', `skip=${start}`, `count=${sectors}`, 'status=none']);
  const volume = /^Volume id: (.*)$/m.exec(run('isoinfo', ['-d', '-i', iso]))?.[1];
  console.log(`  Partition ${nr} is the config drive (volume ${volume}), copied out with:`);
  console.log(`  dd if=${AGENT_DISK} of=${iso} bs=512 skip=${start} count=${sectors}`);
  console.log(`  isoinfo -R -f -i ${iso}`);
  console.log(run('isoinfo', ['-R', '-f', '-i', iso]).replace(/^/gm, '    ').trimEnd());
  console.log(`  isoinfo -R -x /openstack/latest/user_data -i ${iso}`);
  console.log(run('isoinfo', ['-R', '-x', '/openstack/latest/user_data', '-i', iso]).replace(/^/gm, '    ').trimEnd());
  // The image's own partition: an ext4 file system (label demo-root), read without mounting it.
  const first = parts[0] as [number, number, number];
  const root = join(dir, 'demo-root.ext4');
  execFileSync('dd', [`if=${AGENT_DISK}`, `of=${root}`, 'bs=512', `skip=${first[1]}`, `count=${first[2]}`, 'status=none']);
  console.log(`  Partition ${first[0]} is the image's ext4 file system; copied out to ${root}:`);
  console.log(`  debugfs -R 'cat /README' ${root}`);
  const readme = spawnSync('debugfs', ['-R', 'cat /README', root], { encoding: 'utf8' });
  if (readme.status === 0) console.log(readme.stdout.replace(/^/gm, '    ').trimEnd());
  console.log('');
}

/** Where to read the trace of fake-0's PUT (its creation on a first run: every activity and Ironic request). */
function showTrace(): void {
  const jaeger = process.env.DEMO_JAEGER_URL;
  const id = traceOf.get(`/v1/namespaces/${NS}/hosts/fake-0`);
  if (!jaeger || !id) return;
  console.log(`The trace of ${NS}/fake-0's PUT (the API call, the workflow, each activity and Ironic request; docs/observability.md):`);
  console.log(`  curl -s ${jaeger}/api/traces/${id} | jq -r '.data[0].spans[].operationName' | sort | uniq -c`);
}

/** The UI's host list per state (docs/operating-ui.md): its columns come from the search attributes. */
function showStateLinks(): void {
  console.log('The hosts by state in the Temporal UI (add the columns MetalflowProvisioningState, MetalflowPoweredOn,\nMetalflowOperation and MetalflowErrorType once with the list\'s "Configure columns"):');
  for (const link of hostStateLinks(UI, 'default', NS)) console.log(`  ${link.label.padEnd(21)} ${link.url}`);
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
