/**
 * The sites' health as Prometheus gauges (docs/sites.md, docs/observability.md),
 * read from the same SiteHealthReader as `GET /v1/sites` at each scrape.
 */
import { Gauge, Registry } from 'prom-client';
import { WORKER_SEEN_SECONDS, type SiteHealth, type SiteHealthReader } from '../control/site-health';

type Reading = (h: SiteHealth) => number | undefined;

const GAUGES: Array<[name: string, help: string, read: Reading]> = [
  ['metalflow_site_healthy', 'A worker polled the site\'s task queue lately and its Ironic answered the API (1) or not (0)', (h) => (h.healthy ? 1 : 0)],
  [
    'metalflow_site_workers',
    `Workers seen polling the site's task queue for activities within ${WORKER_SEEN_SECONDS} s`,
    (h) => h.workers.filter((w) => w.lastPollAt !== undefined && Date.parse(w.lastPollAt) >= Date.now() - WORKER_SEEN_SECONDS * 1000).length,
  ],
  ['metalflow_site_last_poll_timestamp_seconds', 'When a worker last polled the site\'s task queue (absent: none Temporal remembers)', (h) => (h.lastPollAt ? Date.parse(h.lastPollAt) / 1000 : undefined)],
  ['metalflow_site_backlog_tasks', 'Activities waiting on the site\'s task queue for a worker (the server\'s approximate count)', (h) => h.backlog?.tasks],
  ['metalflow_site_backlog_age_seconds', 'How long the oldest of them has waited', (h) => h.backlog?.oldestSeconds],
  ['metalflow_site_ironic_reachable', 'The site\'s Ironic answered a GET of its API root from the API process (1) or not (0)', (h) => (h.ironic.reachable ? 1 : 0)],
];

export function siteMetricsRegistry(reader: SiteHealthReader): Registry {
  const registry = new Registry();
  // One read per scrape: the first gauge collected asks, the others take the same answer (the reader keeps it 5 s).
  for (const [name, help, read] of GAUGES) {
    new Gauge({
      name,
      help,
      labelNames: ['site'],
      registers: [registry],
      async collect() {
        this.reset();
        for (const h of await reader.read()) {
          const value = read(h);
          if (value !== undefined) this.set({ site: h.name }, value);
        }
      },
    });
  }
  return registry;
}
