/**
 * A whole image's GET over Node's own HTTP client instead of undici. undici
 * 7 (7.30.2, the newest 7.x) throws an uncatchable AssertionError
 * (`assert(!this.paused)` in its HTTP/1 parser) and so kills the worker
 * process when a server closes the connection (`Connection: close`, an
 * HTTP/1.0 server) while the response body is held back by backpressure:
 * exactly a download to a disk slower than the network from such a server
 * (`make demo`'s Python origin did it). Fixed in undici 8 (nodejs/undici#5360,
 * #5474), which needs Node 22. Probes and checksum files read a few bytes and
 * stay on undici; only the long streaming download comes here.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { ImageError, networkError, statusError, where } from './errors';
import { DEFAULT_IMAGE_TIMEOUT_MS, type ImageHttpOptions } from './http';
import { isIP } from 'node:net';
import { policyLookup, refusal } from './address-policy';

const MAX_REDIRECTS = 5;

function getOnce(url: URL, opts: ImageHttpOptions, signal?: AbortSignal): Promise<IncomingMessage> {
  const timeout = opts.timeoutMs ?? DEFAULT_IMAGE_TIMEOUT_MS;
  const policy = opts.policy;
  const port = Number(url.port) || (url.protocol === 'https:' ? 443 : 80);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  // An address literal is never looked up: checked here; a name is checked on what it resolves to.
  const refused = policy && isIP(host) ? refusal(policy, host, port) : undefined;
  if (refused) return Promise.reject(refused);
  return new Promise((resolve, reject) => {
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send(
      url,
      { method: 'GET', ...(opts.ca && url.protocol === 'https:' ? { ca: opts.ca } : {}), ...(signal ? { signal } : {}), ...(policy ? { lookup: policyLookup(policy, () => port) } : {}) },
      resolve,
    );
    // Idle time on the socket, connecting and reading alike (undici's connect, headers and body timeouts).
    req.setTimeout(timeout, () => req.destroy(new Error(`no data for ${timeout / 1000} s`)));
    req.once('error', reject);
    req.end();
  });
}

/**
 * The response of a GET of `url`, redirects followed (at most 5), its status
 * checked: an HTTP error or a request without an answer is an ImageError naming
 * `what`, never quoting the URL. The caller reads (or destroys) the body.
 */
export async function getImageStream(what: string, url: string, opts: ImageHttpOptions = {}, signal?: AbortSignal): Promise<IncomingMessage> {
  let current = new URL(url);
  for (let hops = 0; ; hops++) {
    let res: IncomingMessage;
    try {
      res = await getOnce(current, opts, signal);
    } catch (err) {
      throw networkError(`the ${what}`, url, err);
    }
    const status = res.statusCode ?? 0;
    if (status >= 300 && status < 400) {
      res.resume();
      const location = res.headers.location;
      if (!location || hops >= MAX_REDIRECTS) {
        throw new ImageError('http-error', `the ${what} at ${where(url)}: HTTP ${status}: more than ${MAX_REDIRECTS} redirects, or a redirect without a Location`, status);
      }
      current = new URL(location, current);
      continue;
    }
    if (status >= 400 || status < 200) {
      res.resume();
      throw statusError(`the ${what}`, url, status);
    }
    return res;
  }
}
