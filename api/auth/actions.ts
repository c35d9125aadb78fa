/**
 * The action each route needs, in one table so a reviewer sees every
 * permission at once. A route missing here needs view for GET and admin for
 * anything else: a new route is closed until it is listed.
 */
import type { Action } from './roles';

const HOST = '/v1/namespaces/:namespace/hosts/:name';

const POOL = '/v1/namespaces/:namespace/ippools/:name';

const ACTIONS: Record<string, Action> = {
  // IP pools define a network's addresses: admin, as hosts are; claiming and releasing one is an operator's.
  [`PUT ${POOL}`]: 'admin',
  [`DELETE ${POOL}`]: 'admin',
  [`PUT ${POOL}/claims/:claim`]: 'operate',
  [`DELETE ${POOL}/claims/:claim`]: 'operate',
  [`PUT ${HOST}`]: 'admin',
  [`DELETE ${HOST}`]: 'admin',
  [`PUT ${HOST}/image`]: 'operate',
  [`DELETE ${HOST}/image`]: 'operate',
  [`POST ${HOST}/reboot`]: 'operate',
  [`POST ${HOST}/adopt`]: 'operate',
  [`PUT ${HOST}/power-off-requests/:key`]: 'operate',
  [`DELETE ${HOST}/power-off-requests/:key`]: 'operate',
  // Detaching takes the host out of this plane's Ironic (a pivot's hand-over): admin, as deleting it is.
  [`PUT ${HOST}/detached`]: 'admin',
  [`DELETE ${HOST}/detached`]: 'admin',
  [`PUT ${HOST}/paused`]: 'operate',
  [`DELETE ${HOST}/paused`]: 'operate',
  [`POST ${HOST}/remediations`]: 'operate',
  // As the fleet's reinspect.
  [`POST ${HOST}/inspect`]: 'operate',
  // Lets a host stopped at the retry limit try its image again, as changing the image would.
  [`DELETE ${HOST}/provisioning-fail-count`]: 'operate',
  // A manual clean may erase the host's disks: admin, as deleting it is; withdrawing one is safe.
  [`POST ${HOST}/clean`]: 'admin',
  [`DELETE ${HOST}/clean`]: 'operate',
  // Building a RAID layout destroys the disks' data: admin, as a whole spec is.
  [`PUT ${HOST}/raid`]: 'admin',
  // BIOS settings can leave a host unbootable (boot mode, devices): admin, as its spec.firmware is.
  [`PUT ${HOST}/firmware-settings`]: 'admin',
  // A firmware image runs on the host's BIOS or BMC: admin.
  [`PUT ${HOST}/firmware-updates`]: 'admin',
};

/**
 * Fleet operations touch hosts in several namespaces: the guard lets a known
 * caller through and the handler checks the role in each of them (api/fleet-routes.ts, api/pivot-routes.ts).
 */
export const SCOPED_BY_HANDLER = new Set([
  'POST /v1/fleet-operations',
  'GET /v1/fleet-operations',
  'GET /v1/fleet-operations/:name',
  'POST /v1/fleet-operations/:name/pause',
  'POST /v1/fleet-operations/:name/resume',
  'POST /v1/fleet-operations/:name/cancel',
  'POST /v1/pivots',
  'GET /v1/pivots/:name',
  'POST /v1/pivots/:name/pause',
  'POST /v1/pivots/:name/resume',
  'POST /v1/pivots/:name/cancel',
]);

/**
 * Pages that hold no data and read the API with the caller's token from the browser (api/fleet-page.ts):
 * Host and Origin are checked, no credentials asked (a browser sends none on a plain navigation).
 */
export const PAGE_ROUTES = new Set(['GET /fleet']);

/** Routes anyone may read: probes and the API description hold nothing about hosts. */
export const PUBLIC_ROUTES = new Set(['GET /healthz', 'GET /openapi.json']);

export function actionFor(method: string, route: string): Action {
  return ACTIONS[`${method} ${route}`] ?? (method === 'GET' || method === 'HEAD' ? 'view' : 'admin');
}
