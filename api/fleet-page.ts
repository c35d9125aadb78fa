/**
 * The fleet page: one static HTML file (fleet-page.html, no build step) that
 * reads the API with the caller's own token and lists hosts, fleet operations
 * and sites. The page holds no data: its calls to /v1 are checked as any
 * other (token, role, Host, Origin), and the page itself passes the Host and
 * Origin checks but asks for no token (a browser cannot send one on a plain
 * navigation). Its inline script and style are allowed by hash, nothing else loads.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';

export interface FleetPageSettings {
  /** Where the page's links to host and fleet runs point. */
  temporalUi: { url: string; namespace: string };
  /** The configured sites, the default one first. */
  sites: ReadonlyArray<{ name: string; taskQueue: string }>;
}

export const FLEET_PAGE_PATH = '/fleet';

const PAGE = readFileSync(new URL('./fleet-page.html', import.meta.url), 'utf8');

function inlineHash(html: string, tag: 'script' | 'style'): string {
  const m = new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`).exec(html);
  if (!m) throw new Error(`fleet-page.html has no inline ${tag}`);
  return `'sha256-${createHash('sha256').update(m[1]!).digest('base64')}'`;
}

const CSP = [
  `default-src 'none'`,
  `script-src ${inlineHash(PAGE, 'script')}`,
  `style-src ${inlineHash(PAGE, 'style')}`,
  `connect-src 'self'`,
  // The page's empty icon: no request for /favicon.ico, which would need a token.
  `img-src data:`,
  `form-action 'none'`,
  `frame-ancestors 'none'`,
  `base-uri 'none'`,
].join('; ');

export function registerFleetPage(app: FastifyInstance, settings: FleetPageSettings): void {
  app.get(FLEET_PAGE_PATH, { schema: { hide: true } }, async (_req, reply) =>
    reply
      .header('content-type', 'text/html; charset=utf-8')
      .header('content-security-policy', CSP)
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .header('cache-control', 'no-store')
      .send(PAGE),
  );
  app.get(
    '/v1/ui-settings',
    { schema: { summary: "What the fleet page needs besides hosts and fleet operations: the Temporal UI's address and namespace, the configured sites" } },
    async () => settings,
  );
}
