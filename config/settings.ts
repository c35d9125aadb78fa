/**
 * The configuration reference: every environment variable metalflow's
 * processes and scripts read, with its default, meaning and readers.
 * docs/configuration.md is generated from this table (`npm run docs:config`);
 * test/unit/config-reference.test.ts fails when the table, the doc and the
 * code (config/env.ts and the files that read the environment) disagree.
 * Parsing stays in env.ts: this table only describes it.
 */

export type Reader = 'worker' | 'api' | 'controller' | 'codec server' | 'local stack' | 'demo' | 'tests';

export interface Setting {
  /** One variable, or several documented together (e.g. a host and its port). */
  names: readonly string[];
  /** As shown in the reference; "unset" when there is none. */
  default: string;
  description: string;
  readers: readonly Reader[];
  /**
   * Where loadConfig({}) puts the parsed default (a dot path into
   * MetalflowConfig) and what it must be: the test compares the two, so a
   * changed default in env.ts that the table does not follow fails.
   */
  check?: { path: string; value: unknown };
}

export interface SettingGroup {
  title: string;
  settings: readonly Setting[];
}

const HOST_STARTERS: readonly Reader[] = ['api', 'controller'];
const TEMPORAL_CLIENTS: readonly Reader[] = ['worker', 'api', 'controller', 'codec server'];

export const SETTING_GROUPS: readonly SettingGroup[] = [
  {
    title: 'Temporal',
    settings: [
      { names: ['TEMPORAL_ADDRESS'], default: '127.0.0.1:7233', description: 'Temporal frontend (host:port).', readers: TEMPORAL_CLIENTS, check: { path: 'temporalAddress', value: '127.0.0.1:7233' } },
      { names: ['TEMPORAL_NAMESPACE'], default: 'default', description: 'Temporal namespace.', readers: TEMPORAL_CLIENTS, check: { path: 'temporalNamespace', value: 'default' } },
      { names: ['METALFLOW_TASK_QUEUE'], default: 'metalflow-hosts', description: 'Task queue the worker polls and the API and controller start host workflows on. A site worker (`--site`) starts its site\'s power sentinel workflow there: give it the central workers\' value.', readers: ['worker', 'api', 'controller'], check: { path: 'taskQueue', value: 'metalflow-hosts' } },
      { names: ['TEMPORAL_UI_URL'], default: 'http://127.0.0.1:8233', description: 'Base of the Temporal UI links printed by the demo and the API; its origin is the codec server\'s default CORS origin.', readers: ['api', 'demo', 'codec server'], check: { path: 'temporalUiUrl', value: 'http://127.0.0.1:8233' } },
      { names: ['TEMPORAL_TLS_SERVER_CA_CERT_PATH', 'TEMPORAL_TLS_CLIENT_CERT_PATH', 'TEMPORAL_TLS_CLIENT_KEY_PATH', 'TEMPORAL_TLS_SERVER_NAME'], default: 'unset (plain gRPC)', description: 'Temporal over TLS or mTLS: CA bundle, client certificate and key, and the name to verify (docs/security.md).', readers: TEMPORAL_CLIENTS },
      { names: ['TEMPORAL_TLS_SERVER_CA_CERT_DATA', 'TEMPORAL_TLS_CLIENT_CERT_DATA', 'TEMPORAL_TLS_CLIENT_KEY_DATA'], default: 'unset', description: 'Refused (the process stops naming the file variable to use instead): the TypeScript SDK takes PEM files only.', readers: TEMPORAL_CLIENTS },
      { names: ['TEMPORAL_TLS_DISABLE_HOST_VERIFICATION'], default: 'unset', description: '`true` is refused: the TypeScript SDK always verifies the server name; set `TEMPORAL_TLS_SERVER_NAME` to the name in the server certificate.', readers: TEMPORAL_CLIENTS },
      { names: ['TEMPORAL_TLS'], default: 'on when a TLS file or an API key is given', description: '`true` / `false`: TLS to Temporal (with no CA file: the system\'s CAs).', readers: TEMPORAL_CLIENTS },
      { names: ['TEMPORAL_API_KEY'], default: 'unset', description: 'Sent as `authorization: Bearer <key>` on every Temporal call; turns TLS on unless `TEMPORAL_TLS=false`.', readers: TEMPORAL_CLIENTS },
    ],
  },
  {
    title: 'Ironic and BMCs',
    settings: [
      { names: ['IRONIC_URL'], default: 'http://127.0.0.1:6385', description: 'Ironic API endpoint (API version 1.81 or newer).', readers: ['worker', 'controller'], check: { path: 'ironicUrl', value: 'http://127.0.0.1:6385' } },
      { names: ['IRONIC_USERNAME', 'IRONIC_PASSWORD'], default: 'unset (noauth)', description: 'HTTP basic auth for Ironic (`auth_strategy = http_basic`).', readers: ['worker', 'controller'] },
      { names: ['IRONIC_CACERT_FILE', 'IRONIC_CLIENT_CERT_FILE', 'IRONIC_CLIENT_PRIVATE_KEY_FILE'], default: 'unset (the system\'s CAs, no client certificate)', description: 'Ironic\'s API over `https`: the CA bundle it is verified against, and a client certificate and key (BMO\'s names).', readers: ['worker', 'controller'] },
      { names: ['METALFLOW_IRONIC_REDFISH_VERIFY_CA'], default: 'unset (Ironic\'s `[redfish] verify_ca`)', description: 'Absolute path **on the Ironic conductor**, written as `driver_info.redfish_verify_ca` of `https` Redfish nodes.', readers: ['worker'] },
      { names: ['METALFLOW_BMC_CACERT_FILE'], default: 'unset (Node\'s CAs)', description: 'CA bundle for `https` Redfish BMCs metalflow speaks to itself (pre-flight, fast inspection, BMC power, the direct provisioner).', readers: ['worker'] },
      { names: ['METALFLOW_INSPECTION'], default: 'out-of-band', description: '`out-of-band` (Redfish inspection, no ramdisk) or `agent` (IPA) for Redfish BMCs.', readers: ['worker'], check: { path: 'inspection', value: 'out-of-band' } },
    ],
  },
  {
    title: 'Host workflow options',
    settings: [
      { names: ['METALFLOW_POWER_CHECK_SECONDS'], default: '300', description: 'How often an idle host checks its power (0: never) when the power sentinel does not watch it (sentinel off, or the direct provisioner\'s BMC reads): kept above BMO\'s 60 s for its cost at fleet size (docs/power.md). Read where host workflows start; a running host keeps the value it started with.', readers: HOST_STARTERS },
      { names: ['METALFLOW_SOFT_POWER_OFF_SECONDS'], default: '180', description: 'Soft power off / soft reboot timeout before the hard one (at least 1).', readers: HOST_STARTERS },
      { names: ['METALFLOW_POWER_SENTINEL_SECONDS'], default: '30', description: 'Worker: how often the power sentinel lists Ironic\'s nodes (one paginated list for the whole fleet; a site worker, `--site`, runs its site\'s sentinel over the site\'s Ironic) and tells the hosts whose node changed power or provision state at rest or vanished: a lost node or a power change through Ironic is seen within this, a change at the BMC within this plus Ironic\'s sync_power_state_interval (0: no sentinel; docs/power.md). The API and controller read it too: with the sentinel on, their hosts check their own power only every `METALFLOW_WATCHED_POWER_CHECK_SECONDS`, so give every process the same value.', readers: ['worker', 'api', 'controller'], check: { path: 'powerSentinelSeconds', value: 30 } },
      { names: ['METALFLOW_WATCHED_POWER_CHECK_SECONDS'], default: '1800 with the sentinel on, else unset (`METALFLOW_POWER_CHECK_SECONDS`)', description: 'The backstop power check of a host on an Ironic node while the sentinel watches it (the direct provisioner keeps `METALFLOW_POWER_CHECK_SECONDS`).', readers: HOST_STARTERS, check: { path: 'hostOptions.watchedPowerCheckSeconds', value: 1800 } },
      { names: ['METALFLOW_MAX_HISTORY_EVENTS'], default: '4000', description: 'An idle host workflow whose history passed this many events continues as new (Temporal may suggest it earlier); 20-10240.', readers: HOST_STARTERS },
      { names: ['METALFLOW_MAX_PROVISIONING_RETRIES'], default: '5', description: 'BMO\'s `--max-provisioning-retries`: failed deploys of one image before the host stops trying (0: no limit).', readers: HOST_STARTERS },
      { names: ['METALFLOW_PROBE_IMAGES'], default: '0', description: '`1` checks each image (probe, format, checksum file) before a deploy (docs/images.md).', readers: HOST_STARTERS },
      { names: ['METALFLOW_CACHE_IMAGES'], default: '0', description: '`1` deploys each image through the workers\' image cache (docs/images.md); the workers need `METALFLOW_IMAGE_CACHE_DIR`.', readers: HOST_STARTERS },
      { names: ['METALFLOW_IMAGE_CACHE_SITES'], default: 'unset', description: 'Comma-separated sites with a cache worker of their own; hosts whose `spec.dhcp.site` is one cache their image there.', readers: HOST_STARTERS },
      { names: ['METALFLOW_SITE_WATCH_SECONDS'], default: '60', description: 'How long a configured site may leave a host\'s hardware call untaken before the host shows `siteUnreachable` (and, in Kubernetes mode, the condition `SiteReachable` False and a `SiteUnreachable` Event); the call then waits for the site with no limit (docs/sites.md). The controller also gives its node health list of a site this long before it reports the site\'s hosts `Healthy` `Unknown`/`SiteUnreachable`.', readers: HOST_STARTERS },
      { names: ['METALFLOW_DHCP_LEASE_CHECK_SECONDS'], default: '60', description: 'How often an idle host with `spec.dhcp` reads its lease into `status.dhcp` (0: never; docs/dhcp-and-ipam.md).', readers: HOST_STARTERS },
    ],
  },
  {
    title: 'Worker',
    settings: [
      { names: ['METALFLOW_PROVISIONING_LIMIT'], default: '20', description: 'Hosts inspecting, provisioning or deprovisioning at once per task queue, as Metal3\'s `PROVISIONING_LIMIT`; 0: no limit (docs/kubernetes.md).', readers: ['worker'], check: { path: 'provisioningLimit', value: 20 } },
      { names: ['METALFLOW_HEARTBEAT_THROTTLE_SECONDS'], default: '15', description: 'The longest a worker holds back an activity\'s heartbeat. A cancellation (a delete or a removed image stopping a deploy under way) reaches the activity with the next heartbeat sent, so it takes up to this long; lower costs one heartbeat call per waiting activity per interval. The tests use 1.', readers: ['worker'], check: { path: 'heartbeatThrottleSeconds', value: 15 } },
      { names: ['METALFLOW_WORKFLOW_BUNDLE'], default: 'unset', description: 'Path to a prebuilt workflow bundle (skips bundling at worker start).', readers: ['worker'] },
      { names: ['METALFLOW_WORKER_DEPLOYMENT', 'METALFLOW_WORKER_BUILD_ID', 'METALFLOW_WORKER_VERSIONING'], default: '`metalflow`, version+commit, `on`', description: "The worker's Worker Deployment Version (deployment name, build id) and whether it polls versioned at all; a new build is canaried and promoted (docs/operations.md, *Upgrading workers*).", readers: ['worker'] },
      { names: ['METALFLOW_WORKER_MAX_CACHED_WORKFLOWS'], default: '400', description: 'Workflows kept in worker memory (about 0.3 MiB each); a host out of the cache replays its history when it wakes.', readers: ['worker'] },
      { names: ['METALFLOW_WORKER_WORKFLOW_TASKS', 'METALFLOW_WORKER_ACTIVITY_TASKS'], default: '40, 2000', description: 'Workflow / activity task slots (activities mostly wait on Ironic or a BMC, so one per host in flight is cheap). On a worker short of CPU, workflow tasks taken but not finished within their 10 s timeout are handed out again and redone: fewer workflow slots avoid that, at the price of a longer wait for a slot (docs/operations.md, *API call to first activity*).', readers: ['worker'] },
      { names: ['METALFLOW_WORKER_WORKFLOW_POLLERS', 'METALFLOW_WORKER_ACTIVITY_POLLERS'], default: '20, 10', description: 'Concurrent long polls per kind (at least 2).', readers: ['worker'] },
      { names: ['METALFLOW_WORKER_NONSTICKY_POLL_RATIO'], default: '0.5 (SDK: 0.2)', description: 'Share of workflow pollers on the shared queue, where new hosts and new operations arrive; in (0, 1].', readers: ['worker'] },
      { names: ['METALFLOW_WORKER_WORKFLOW_THREADS'], default: '1 (the SDK\'s, with one reused V8 context)', description: 'Threads running workflow code, each with its own V8 context (more memory); a second one can take workflow tasks when many arrive at once on a machine with a core to spare (it did not help on 2 busy cores: docs/operations.md, *API call to first activity*).', readers: ['worker'] },
      { names: ['MALLOC_ARENA_MAX'], default: '2 where metalflow launches Node; glibc\'s own elsewhere', description: 'glibc\'s, read when a process starts: set it to 2 wherever you launch the worker yourself (systemd unit, container `ENV`). The worker says so at start when it is unset.', readers: ['worker', 'api'] },
      { names: ['METALFLOW_IMAGE_CACERT_FILE'], default: 'unset (Node\'s CAs)', description: 'CA bundle for `https` image and checksum-file URLs the image check reads.', readers: ['worker'] },
      { names: ['METALFLOW_IMAGE_FETCH_ALLOW', 'METALFLOW_IMAGE_FETCH_DENY'], default: 'unset: loopback, link-local and the worker\'s own listeners refused', description: 'Comma-separated CIDRs the image probe, checksum files and image downloads may reach despite the deny-list, and more to refuse (`private` for the private ranges); docs/security.md.', readers: ['worker'] },
      { names: ['METALFLOW_IMAGE_CACHE_DIR'], default: 'unset (no cache)', description: 'The image cache\'s folder; set, the worker serves it over HTTP (docs/images.md).', readers: ['worker'] },
      { names: ['METALFLOW_IMAGE_CACHE_HOST', 'METALFLOW_IMAGE_CACHE_PORT'], default: '127.0.0.1, 8081', description: 'Where the image cache\'s HTTP server listens (the provisioning network in a real site).', readers: ['worker'] },
      { names: ['METALFLOW_IMAGE_CACHE_URL'], default: 'http://<host>:<port>', description: 'Base URL Ironic\'s agent and the BMCs download cached images from (`http(s)://host[:port]`, no path).', readers: ['worker'] },
      { names: ['METALFLOW_IMAGE_CACHE_SITE'], default: 'unset', description: 'With `METALFLOW_IMAGE_CACHE_DIR`: this worker is that site\'s image cache and also polls the site\'s cache task queue.', readers: ['worker'] },
      { names: ['METALFLOW_IMAGE_CACHE_MAX_BYTES'], default: '21474836480 (20 GiB)', description: 'The cache\'s size limit; the least recently used images are deleted past it.', readers: ['worker'] },
      { names: ['METALFLOW_DHCP_SITES', 'METALFLOW_DHCP_LEASE_SECONDS'], default: 'unset, 3600', description: 'Each site\'s dnsmasq as `site=<dir>` pairs (`<dir>` holds `hosts.d/` and `dnsmasq.leases`, as `scripts/dnsmasq.sh` lays them out) and the lease time they give.', readers: ['worker'] },
      { names: ['METALFLOW_SITES_FILE'], default: 'unset (the default site only)', description: 'JSON file of the sites beside the default one: each site\'s Ironic (URL, CA and credential files), DHCP folders and image cache; `spec.site` and the `metalflow.io/site` label name them, `npm run worker -- --site NAME` serves one (docs/sites.md).', readers: ['worker', 'api', 'controller'] },
      { names: ['METALFLOW_PIVOT_PLANES'], default: 'unset (no plane registered)', description: 'The file registering the planes a pivot may name by id, and their `allowedUrls` (docs/pivot.md, docs/security.md).', readers: ['worker', 'api'] },
    ],
  },
  {
    title: 'Secrets and payload encryption',
    settings: [
      { names: ['METALFLOW_STATE_DIR'], default: '.state/stack', description: 'Where the local stack, the demo\'s worker and API and the local secret store live.', readers: ['worker', 'api', 'local stack'] },
      { names: ['METALFLOW_SECRET_DIR'], default: '$METALFLOW_STATE_DIR/secrets', description: 'Local secret store folder (without Kubernetes).', readers: ['worker', 'api'] },
      { names: ['METALFLOW_SECRET_KEY'], default: 'unset', description: 'Base64 of 32 random bytes: the secret store key.', readers: ['worker', 'api'] },
      { names: ['METALFLOW_SECRET_KEY_FILE'], default: '$METALFLOW_STATE_DIR/secret.key', description: 'Key file, created (0600) on first use when no key is set.', readers: ['worker', 'api'] },
      { names: ['METALFLOW_SITE_SECRET_DIR'], default: 'unset', description: 'A site worker (`--site`) of a site with `"secrets": "site"` in API mode: its own secret store, where it reads its hosts\' BMC credentials (`npm run site-secret` writes them; docs/sites.md). Never the central `METALFLOW_SECRET_DIR`.', readers: ['worker'] },
      { names: ['METALFLOW_SITE_SECRET_KEY', 'METALFLOW_SITE_SECRET_KEY_FILE'], default: 'unset, `<METALFLOW_SITE_SECRET_DIR>.key`', description: 'That store\'s key: base64 of 32 random bytes, or a file holding it (created, 0600, on first use).', readers: ['worker'] },
      { names: ['METALFLOW_SITE_SECRETS_KUBECONFIG'], default: 'unset (the pod\'s service account)', description: 'A site worker of a site with `"secrets": "site"` in Kubernetes mode: the kubeconfig of the site\'s cluster, whose Secrets hold its hosts\' BMC credentials (`METALFLOW_KUBECONFIG` stays the management cluster\'s).', readers: ['worker'] },
      { names: ['METALFLOW_PAYLOAD_KEYS_FILE'], default: 'unset (payloads not encrypted; `make demo` sets one)', description: 'Payload encryption key ring, `<id>:<base64 32 bytes>` lines, the first encrypts (docs/security.md).', readers: ['worker', 'api', 'controller', 'codec server'] },
    ],
  },
  {
    title: 'HTTP API',
    settings: [
      { names: ['METALFLOW_API_HOST', 'METALFLOW_API_PORT'], default: '127.0.0.1, 8080', description: 'API listen address.', readers: ['api'], check: { path: 'apiPort', value: 8080 } },
      { names: ['METALFLOW_API_TOKENS_FILE'], default: 'unset (required)', description: 'API credentials: `sha256:<token hash>` or `x509:<CN>`, subject, grants (docs/security.md).', readers: ['api'] },
      { names: ['METALFLOW_API_KUBE_ROLES'], default: 'unset', description: 'Kubernetes TokenReview as a token source: user/group to grants (docs/security.md).', readers: ['api'] },
      { names: ['METALFLOW_API_AUTH'], default: 'tokens', description: '`none`: no authentication, only with a loopback `METALFLOW_API_HOST`.', readers: ['api'] },
      { names: ['METALFLOW_API_ALLOWED_HOSTS', 'METALFLOW_API_ALLOWED_ORIGINS'], default: 'listen address + loopback names, none', description: 'Comma-separated `Host` names and `Origin`s the API accepts.', readers: ['api'] },
      { names: ['METALFLOW_API_AUDIT_LOG'], default: 'stdout', description: 'File the audit lines (one per change) are appended to.', readers: ['api'] },
      { names: ['METALFLOW_API_TLS_CERT_FILE', 'METALFLOW_API_TLS_KEY_FILE', 'METALFLOW_API_TLS_CLIENT_CA_FILE'], default: 'unset', description: 'HTTPS, and client certificates from that CA (docs/security.md).', readers: ['api'] },
      { names: ['METALFLOW_API_UPDATE_TIMEOUT_SECONDS'], default: '60', description: 'How long an API change waits for Temporal to take it before answering 503 (at least 1).', readers: ['api'], check: { path: 'apiUpdateTimeoutSeconds', value: 60 } },
      { names: ['METALFLOW_CODEC_HOST', 'METALFLOW_CODEC_PORT', 'METALFLOW_CODEC_CORS_ORIGINS'], default: '127.0.0.1, 8089, the UI\'s origin', description: 'The codec server (`npm run codec-server`); it listens on loopback only.', readers: ['codec server'] },
    ],
  },
  {
    title: 'Kubernetes mode and the controller',
    settings: [
      { names: ['METALFLOW_KUBECONFIG'], default: 'unset', description: 'Kubernetes mode for the worker and the controller (docs/kubernetes.md); the API reads it for `METALFLOW_API_KUBE_ROLES`.', readers: ['worker', 'api', 'controller'] },
      { names: ['METALFLOW_SERVICE_ACCOUNT_DIR'], default: '/var/run/secrets/kubernetes.io/serviceaccount', description: 'In-cluster token and CA folder, used with `KUBERNETES_SERVICE_HOST`/`_PORT` when `METALFLOW_KUBECONFIG` is unset.', readers: ['worker', 'api', 'controller'] },
      { names: ['METALFLOW_WATCH_NAMESPACE'], default: 'all namespaces', description: 'The namespaces the controller watches, comma-separated (one list and watch each); unset or empty: every namespace, cluster-wide (docs/takeover.md, docs/security.md).', readers: ['controller'] },
      { names: ['METALFLOW_LEASE_NAMESPACE', 'METALFLOW_LEASE_SECONDS'], default: 'default, 15', description: 'The controller\'s leader-election Lease and its duration (at least 2 s).', readers: ['controller'], check: { path: 'controller.leaseSeconds', value: 15 } },
      { names: ['METALFLOW_CONTROLLER_ID'], default: 'host-pid', description: 'The controller\'s identity in the Lease.', readers: ['controller'] },
      { names: ['METALFLOW_CONTROLLER_CONCURRENCY'], default: '64', description: 'Hosts reconciled at the same time (1-10000).', readers: ['controller'], check: { path: 'controller.concurrency', value: 64 } },
      { names: ['METALFLOW_CONTROLLER_RECONCILE_TIMEOUT_SECONDS'], default: '60', description: 'How long one reconcile may wait on Temporal before it fails and is retried with backoff.', readers: ['controller'], check: { path: 'controller.reconcileTimeoutSeconds', value: 60 } },
      { names: ['METALFLOW_CONTROLLER_ENDED_SCAN_SECONDS'], default: '30', description: 'How often Temporal is asked which host workflows ended abnormally, to re-adopt those hosts.', readers: ['controller'], check: { path: 'controller.endedScanSeconds', value: 30 } },
      { names: ['METALFLOW_CONTROLLER_STATUS_SCAN_SECONDS'], default: '60', description: 'How often the BareMetalHosts\' status is compared with their workflows\' search attributes; a host behind for two scans in a row (a status write lost with its worker) is asked to write its status again, once per difference.', readers: ['controller'], check: { path: 'controller.statusScanSeconds', value: 60 } },
      { names: ['METALFLOW_CONTROLLER_RESYNC_SECONDS'], default: '600', description: 'How often every host is queued again with no event to bring it.', readers: ['controller'], check: { path: 'controller.resyncSeconds', value: 600 } },
      { names: ['METALFLOW_CONTROLLER_NODE_HEALTH_SECONDS'], default: '60 (0: off)', description: 'How often one list of Ironic\'s nodes becomes the hosts\' `Healthy` condition (the controller only reads Ironic).', readers: ['controller'], check: { path: 'controller.nodeHealthSeconds', value: 60 } },
      { names: ['METALFLOW_FIRMWARE_RESYNC_SECONDS'], default: '1800', description: 'How often a host\'s BIOS settings and firmware components are read from Ironic again.', readers: ['controller'], check: { path: 'controller.firmwareResyncSeconds', value: 1800 } },
      { names: ['METALFLOW_BMO_CHECK', 'METALFLOW_BMO_LEASE_NAMESPACE'], default: 'on, any namespace', description: 'No host is driven while Metal3\'s operator looks active (its Lease `baremetal-operator`, or its recent writes to the host); `off` skips the check (docs/takeover.md).', readers: ['controller'], check: { path: 'controller.bmoCheck', value: true } },
      { names: ['METALFLOW_REMEDIATION_CAPM3'], default: 'false', description: '`true` reads CAPM3\'s `Metal3Remediation` objects and runs them as HostRemediations (docs/remediation.md).', readers: ['controller'], check: { path: 'controller.remediationCapm3', value: false } },
      { names: ['METALFLOW_HEALTH_CHECK'], default: 'false', description: 'The built-in health check: remediate hosts whose Node stays NotReady (docs/remediation.md).', readers: ['controller'] },
      { names: ['METALFLOW_HEALTH_CHECK_NOT_READY_SECONDS', 'METALFLOW_HEALTH_CHECK_MAX_REMEDIATING', 'METALFLOW_HEALTH_CHECK_GROUP_LABEL', 'METALFLOW_HEALTH_CHECK_GROUP_MAX_PERCENT'], default: '300, 2, topology.kubernetes.io/zone, 25', description: 'The health check\'s limits: how long NotReady, how many at once, the label grouping hosts and the share of a group at once.', readers: ['controller'] },
      { names: ['METALFLOW_HEALTH_CHECK_RETRY_LIMIT', 'METALFLOW_HEALTH_CHECK_TIMEOUT_SECONDS', 'METALFLOW_HEALTH_CHECK_NODE_HANDLING'], default: '1, 600, OutOfServiceTaint', description: 'The remediations the health check creates: power cycles, step timeout and how the Node is handled.', readers: ['controller'] },
    ],
  },
  {
    title: 'Metrics and traces',
    settings: [
      { names: ['METALFLOW_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_ENDPOINT'], default: 'unset (no tracing)', description: 'OpenTelemetry tracing: the OTLP/HTTP (protobuf) collector, e.g. `http://127.0.0.1:4318` (`/v1/traces` is added), that the API, the controller and the worker send spans to: API requests, Temporal calls, workflows, activities and their Ironic and BMC requests (docs/observability.md). The first wins; OpenTelemetry\'s `OTEL_EXPORTER_OTLP_HEADERS` adds headers (a collector\'s token).', readers: ['worker', 'api', 'controller'] },
      { names: ['METALFLOW_METRICS_HOST'], default: '127.0.0.1', description: 'Address the Prometheus endpoints listen on (docs/observability.md).', readers: ['worker', 'api', 'controller'], check: { path: 'metricsHost', value: '127.0.0.1' } },
      { names: ['METALFLOW_CONTROLLER_METRICS_PORT', 'METALFLOW_WORKER_METRICS_PORT'], default: 'off, off', description: '`GET /metrics` (plain HTTP): the controller\'s `metal3_*` series and the worker\'s Temporal SDK metrics.', readers: ['worker', 'controller'] },
      { names: ['METALFLOW_API_METRICS_PORT'], default: 'off', description: '`GET /metrics` (plain HTTP) of the API process: each site\'s health (`metalflow_site_*`, docs/sites.md).', readers: ['api'] },
    ],
  },
  {
    title: 'Local stack, demo and tests',
    settings: [
      { names: ['TEMPORAL_PORT', 'TEMPORAL_UI_PORT', 'IRONIC_PORT', 'SUSHY_PORT'], default: '7233, 8233, 6385, 8000', description: 'Ports of the local stack (`scripts/stack.sh`).', readers: ['local stack'] },
      { names: ['IRONIC_CERT_FILE', 'IRONIC_KEY_FILE', 'SUSHY_EMULATOR_SSL_CERT', 'SUSHY_EMULATOR_SSL_KEY'], default: 'unset (HTTP)', description: 'The local stack\'s Ironic and sushy-tools over HTTPS with that certificate.', readers: ['local stack'] },
      { names: ['IRONIC_SYNC_POWER_STATE_INTERVAL'], default: '30 (the benchmark: 120)', description: 'The local Ironic\'s `[conductor] sync_power_state_interval`.', readers: ['local stack'] },
      { names: ['IRONIC_NODE_HISTORY'], default: 'true', description: 'The local Ironic\'s `[conductor] node_history`: `false` as Metal3\'s ironic-image sets it (docs/metal3-compatibility.md); a test of its own runs that.', readers: ['local stack'] },
      { names: ['IRONIC_CALLBACK_TIMEOUT', 'IRONIC_CHECK_PROVISION_STATE_INTERVAL'], default: '600, 15', description: 'The local Ironic\'s wait for an agent\'s call-back during a deploy or a clean (`[conductor] deploy_callback_timeout`, `clean_callback_timeout`) and how often it checks (`check_provision_state_interval`); the agent failure tests shorten them in an Ironic of their own.', readers: ['local stack'] },
      { names: ['IRONIC_AGENT_COMMAND_WAIT_INTERVAL', 'IRONIC_AGENT_POWER_OFF_POLL_INTERVAL'], default: '6, 5', description: 'The agent path\'s local Ironic: seconds between its checks of an agent command it waits on (`[agent] command_wait_interval`) and between its power reads after the agent\'s soft power off (`post_deploy_get_power_state_retry_interval`, 30 s in all); the agent tests\' labs use 1 and 1.', readers: ['local stack'] },
      { names: ['IRONIC_MEMO_SESSION_HASH'], default: 'unset', description: '`1`: the local Ironic computes the PBKDF2 hash (600,000 rounds) its Redfish driver makes of a BMC password for every BMC call once per password and address (`scripts/ironic-site/sitecustomize.py`). The test stack and the tests\' own Ironics set it; the benchmark does not.', readers: ['local stack'] },
      { names: ['TEMPORAL_TASKQUEUE_PARTITIONS'], default: '1', description: 'The local dev server\'s partitions per task queue (`matching.numTaskqueueReadPartitions` and `WritePartitions`; Temporal\'s default is 4): one worker process takes a burst of new hosts\' first workflow tasks from one partition (docs/operations.md, *API call to first activity*).', readers: ['local stack'] },
      { names: ['TEMPORAL_METRICS_PORT'], default: 'unset', description: 'The local dev server\'s Prometheus metrics on that port (`--metrics-port`): `service_requests` by operation says what a slow run asks Temporal for (docs/testing.md).', readers: ['local stack'] },
      { names: ['IRONIC_SQLITE_POOL'], default: 'unset', description: '`1`: the local Ironic keeps a pool of SQLite connections instead of opening one per database session (oslo.db\'s NullPool); the same settings and transactions on each (`scripts/ironic-site/sitecustomize.py`). The test stack and the tests\' own Ironics set it; the benchmark and the demo do not.', readers: ['local stack'] },
      { names: ['IRONIC_DB_TEMPLATE'], default: 'unset', description: '`1`: the local Ironic\'s empty database is a copy of the one `ironic-dbsync create_schema` made for the same venv before (`.state/ironic-db-templates/`, named by a hash of Ironic\'s files and the venv\'s package versions) instead of running it again. The test stack and the tests\' own Ironics set it.', readers: ['local stack'] },
      { names: ['TEMPORAL_SQLITE_PRAGMAS'], default: 'journal_mode=wal synchronous=normal', description: 'The local dev server\'s SQLite pragmas (a killed server loses nothing; only an OS crash can lose the last commits); empty for SQLite\'s defaults.', readers: ['local stack'] },
      { names: ['IPMI_SIM_PORT', 'IPMI_SIM_USERNAME', 'IPMI_SIM_PASSWORD'], default: '6623, admin, password', description: 'The demo\'s `ipmi_sim` (`scripts/ipmi-sim.sh`, UDP on 127.0.0.1).', readers: ['demo', 'local stack'] },
      { names: ['DHCP_SITE', 'DHCP_NETNS', 'DHCP_NET', 'DHCP_UNKNOWN', 'DHCP_LEASE_TIME'], default: 'default, mf-dhcp-<site>, 10.251.0, ignore, 1h', description: 'One site\'s dnsmasq in a network namespace (`scripts/dnsmasq.sh`).', readers: ['local stack'] },
      { names: ['DEMO_OTLP_PORT', 'DEMO_JAEGER_PORT', 'DEMO_JAEGER_URL'], default: '4318, 16686, set by the demo', description: 'The demo\'s Jaeger (when `scripts/jaeger.sh install` built it): its OTLP/HTTP and query ports; the demo sets the URL it prints traces from (docs/observability.md).', readers: ['demo'] },
      { names: ['DEMO_DHCP_NET', 'DEMO_DHCP_NETNS', 'DEMO_IMAGE_PORT'], default: '10.251.0, mf-dhcp-demo, 8082', description: 'The demo\'s DHCP network and namespace, and its image origin\'s port.', readers: ['demo'] },
      { names: ['ETCD_PORT', 'KUBE_API_PORT', 'METALFLOW_KUBE_STATE_DIR'], default: '23379, 23443, .state/kube', description: 'The local Kubernetes API server (`scripts/kube.sh`).', readers: ['local stack'] },
    ],
  },
];

export const SETTINGS: readonly Setting[] = SETTING_GROUPS.flatMap((g) => g.settings);

/** Every variable name the reference documents. */
export function settingNames(): Set<string> {
  return new Set(SETTINGS.flatMap((s) => s.names));
}
