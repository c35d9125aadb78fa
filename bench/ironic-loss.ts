/**
 * `npm run bench:at-rest -- --lose-ironic-db`: after the rest window, the
 * bench stack's Ironic restarted on an empty database (scripts/stack.sh
 * `restart ironic --empty-db`, as a Metal3 Ironic pod restarts on its
 * ephemeral SQLite), and each host timed from Ironic answering again until
 * it is registered again: a new node carrying its mark (`extra.metalflow_host`),
 * seen as the answer to the node create Ironic accepted at the bench's proxy
 * (no request of the bench's own while it waits); in Kubernetes mode also its
 * BareMetalHost's `status.provisioning.ID` changed, seen by the driver's watch.
 * The recovery window runs on until every host's new node is back in the
 * provision state its node rested in (lists of Ironic's nodes straight to
 * Ironic, not counted: one before the restart, then only once every host is
 * registered again); its Ironic requests per minute are metalflow's whole
 * cost of the loss.
 */
import { IronicClient } from '../clients/ironic/client';
import { OWNER_KEY } from '../activities/ironic/node-driver';
import type { IronicProxy, RecordedRequest } from './support/ironic-proxy';
import { cpuPercentOfACore, kubeRates, nodesCreated, perMinute, ratesPerMinute, registeredAt, requestsByKind, reregistrationFigures, type KubeRates, type ReregistrationFigures } from './at-rest-figures';
import { sleep } from './common';
import type { K8sDriver } from './k8s-driver';
import { countsDelta, type BenchKube } from './kube-stack';
import { cpuDelta } from './measure';
import { IRONIC_URL, stackAsync } from './procs';
import type { CpuByProcess } from './report';

export interface IronicLossContext {
  namespace: string;
  names: readonly string[];
  proxy: IronicProxy;
  timeoutSeconds: number;
  cpuNow: () => CpuByProcess;
  log: (msg: string) => void;
  /** Kubernetes mode: the driver whose watch sees the objects' node IDs, and the API server whose requests are counted. */
  k8s?: K8sDriver;
  kube?: BenchKube;
}

export interface IronicLossFigures extends ReregistrationFigures {
  /** Ironic down: from the restart's start until it answered again. */
  restartSeconds: number;
  /** Every host registered again and its new node back in the provision state the old one rested in, within the timeout. */
  recovered: boolean;
  /** From Ironic answering again until every new node was back in its resting state (or the timeout): the window of the figures below. */
  recoveryWindowSeconds: number;
  ironicRequests: number;
  /** The window's requests and Ironic's CPU seconds divided by the hosts: what one registration again asks of Ironic. */
  ironicRequestsPerHost: number;
  ironicRequestsPerHostByKind: Record<string, number>;
  ironicCpuSecondsPerHost: number;
  ironicRequestsPerMinute: number;
  ironicRequestsPerMinuteByKind: Record<string, number>;
  cpuPercentOfACore: Record<string, number>;
  /** Kubernetes mode: the API server's requests over the window (the status writes and Events of the re-registrations). */
  kubeApiServer?: KubeRates;
}

const perHost = (n: number, hosts: number): number => Math.round((n / hosts) * 100) / 100;

/** Restarts the bench stack's Ironic on an empty database and times every host's registration again. */
export async function loseIronicDb(ctx: IronicLossContext): Promise<IronicLossFigures> {
  const { names, proxy, k8s, log } = ctx;
  const mark = (name: string): string => `${ctx.namespace}/${name}`;
  const oldIds = new Map(names.map((n) => [n, k8s?.provisioning(n)?.ID]));
  const idChanged = new Map<string, number>();
  const seeId = (name: string): void => {
    const id = k8s?.provisioning(name)?.ID;
    if (!idChanged.has(name) && oldIds.has(name) && id && id !== oldIds.get(name)) idChanged.set(name, Date.now());
  };
  if (k8s) k8s.onChange = seeId;
  // The node creates from the restart on (the requests are recorded as they arrive, answered later).
  let scanned = proxy.requests.length;
  /** Node creates not answered yet (an answered one is read once). */
  let pending: RecordedRequest[] = [];
  const created = new Map<string, number>();
  const registered = new Map<string, number>();
  const look = (): void => {
    for (; scanned < proxy.requests.length; scanned++) {
      const r = proxy.requests[scanned]!;
      if (r.method === 'POST' && r.path.startsWith('/v1/nodes') && !r.path.startsWith('/v1/nodes/')) pending.push(r);
    }
    nodesCreated(pending.filter((r) => r.status !== undefined), created);
    pending = pending.filter((r) => r.status === undefined);
    for (const n of names) {
      if (registered.has(n)) continue;
      const at = registeredAt(k8s ? [created.get(mark(n)), idChanged.get(n)] : [created.get(mark(n))]);
      if (at !== undefined) registered.set(n, at);
    }
  };

  // The provision state each host's node rests in (`manageable` or `available` for an available host): where its new node must get back to.
  const ironic = new IronicClient({ url: IRONIC_URL });
  const marked = async (): Promise<{ mark: unknown; state: string }[]> =>
    (await ironic.listNodeStates(['extra', 'provision_state'])).map((n) => ({ mark: n.extra?.[OWNER_KEY], state: n.provision_state }));
  const restState = new Map((await marked()).map((n) => [n.mark, n.state]));
  const restartAt = Date.now();
  log(`restarting the bench stack's Ironic with an empty database (${names.length} hosts at rest)`);
  await stackAsync(['restart', 'ironic', '--empty-db']);
  const back = Date.now();
  const from = proxy.requests.length;
  // From here: the Ironic that restarted is another process group than the one before.
  const cpu0 = ctx.cpuNow();
  const kube0 = await ctx.kube?.requestCounts();
  log(`Ironic answering again after ${((back - restartAt) / 1000).toFixed(1)} s; waiting up to ${ctx.timeoutSeconds} s for every host to register again`);
  const deadline = back + ctx.timeoutSeconds * 1000;
  let lastLog = back;
  for (;;) {
    look();
    if (registered.size === names.length || Date.now() > deadline) break;
    if (Date.now() - lastLog >= 15_000) {
      lastLog = Date.now();
      log(`${registered.size} of ${names.length} registered again after ${((lastLog - back) / 1000).toFixed(0)} s`);
    }
    await sleep(250);
  }
  if (k8s) k8s.onChange = undefined;

  // Recovered: every host's new node back in the provision state its node rested in before the loss (the
  // registration goes on after the node's create). Told by lists of Ironic's nodes straight to Ironic (not counted),
  // sent only from here on, at most every 10 ms per host (10 s at 1,000 hosts) so that they load Ironic little.
  const listEvery = Math.max(2_000, names.length * 10);
  let nodes: { mark: unknown; state: string }[] = [];
  let recoveredAt: number | undefined;
  for (;;) {
    nodes = await marked();
    const home = new Set(nodes.filter((n) => n.state === restState.get(n.mark)).map((n) => n.mark));
    if (registered.size === names.length && names.every((n) => home.has(mark(n)))) recoveredAt = Date.now();
    if (recoveredAt !== undefined || Date.now() + listEvery > deadline) break;
    await sleep(listEvery);
  }
  const end = recoveredAt ?? Date.now();
  const cpu = cpuDelta(cpu0, ctx.cpuNow());
  const kubeCounts = ctx.kube && kube0 ? countsDelta(kube0, await ctx.kube.requestCounts()) : undefined;
  const windowSeconds = (end - back) / 1000;
  const requests = proxy.requests.slice(from).filter((r) => r.at <= end);
  // A node created and gone again is not a registration.
  const marks = new Set(nodes.map((n) => n.mark));
  for (const n of registered.keys()) {
    if (marks.has(mark(n))) continue;
    log(`${n}: a node was created for it after the restart, but Ironic lists none with its mark now`);
    registered.delete(n);
  }
  const figures = reregistrationFigures(names, registered, back);
  log(
    `${figures.reregistered} of ${figures.hosts} hosts registered again, ${figures.withinTarget} within ${figures.targetSeconds} s${figures.seconds ? ` (max ${figures.seconds.max} s)` : ''}; ` +
      (recoveredAt ? `all back in their resting state after ${windowSeconds.toFixed(1)} s` : `not all back in their resting state (${[...new Set(restState.values())].join(', ')}) within ${ctx.timeoutSeconds} s`),
  );
  return {
    ...figures,
    restartSeconds: Math.round((back - restartAt) / 100) / 10,
    recovered: recoveredAt !== undefined,
    recoveryWindowSeconds: Math.round(windowSeconds * 10) / 10,
    ironicRequests: requests.length,
    ironicRequestsPerHost: perHost(requests.length, names.length),
    ironicRequestsPerHostByKind: Object.fromEntries(Object.entries(requestsByKind(requests)).map(([k, n]) => [k, perHost(n, names.length)])),
    ironicCpuSecondsPerHost: Math.round(((cpu.ironic ?? 0) / names.length) * 100) / 100,
    ironicRequestsPerMinute: perMinute(requests.length, windowSeconds),
    ironicRequestsPerMinuteByKind: ratesPerMinute(requestsByKind(requests), windowSeconds),
    cpuPercentOfACore: cpuPercentOfACore(cpu, windowSeconds),
    ...(kubeCounts ? { kubeApiServer: kubeRates(kubeCounts, windowSeconds) } : {}),
  };
}
