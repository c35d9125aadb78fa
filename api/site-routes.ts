/**
 * `GET /v1/sites`: each configured site and its health (control/site-health.ts,
 * docs/sites.md). Sites are the operator's configuration; the answer names no
 * Ironic URL, certificate or credential, only whether the site answers.
 */
import type { FastifyInstance } from 'fastify';
import type { SiteHealthReader } from '../control/site-health';

export function registerSiteRoutes(app: FastifyInstance, health: SiteHealthReader | undefined): void {
  app.get(
    '/v1/sites',
    {
      schema: {
        summary:
          'List the sites (the default one first) with their health: healthy, problems, the workers seen polling the site\'s task queue and their last poll, ' +
          'the activities waiting there (backlog), whether the site\'s Ironic answers the API, and where its hosts\' BMC credentials are held (credentials: central or site); asked at most every 5 s',
      },
    },
    async () => ({ items: health ? await health.read() : [] }),
  );
}
