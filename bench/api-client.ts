/**
 * metalflow's HTTP API as the benchmark and the chaos suite call it: JSON
 * bodies, a bearer token, and patience with a server that is busy or away
 * (5xx answers and no answer at all are sent again with backoff, as a
 * controller requeueing would: every call is a whole desired state, so
 * sending it twice is sending it once; the one exception, a reboot, carries
 * an Idempotency-Key that makes a resend the same reboot).
 */
import { Agent, request } from 'undici';
import { sleep } from './common';

export type ApiMethod = 'GET' | 'PUT' | 'DELETE' | 'POST';

export interface ApiAnswer {
  status: number;
  /** The JSON body (each caller reads the fields of the route it called). */
  json: any;
  sentAt: number;
  respondedAt: number;
}

export interface RetryOptions {
  /** Attempts before the last failure is returned (5xx) or thrown (no answer). */
  attempts?: number;
  /** Backoff cap, ms. */
  maxDelayMs?: number;
  /** Told of each answer or failure that will be retried. */
  onRetry?: (status: number, message: string) => void;
  /** Extra headers sent with every attempt (e.g. a reboot's Idempotency-Key). */
  headers?: Record<string, string>;
}

export class ApiClient {
  private readonly agent: Agent;

  constructor(
    readonly url: string,
    private readonly token: string,
    connections = 16,
  ) {
    this.agent = new Agent({ connections, keepAliveTimeout: 30_000 });
  }

  /** One request, no retry. */
  async request(method: ApiMethod, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<ApiAnswer> {
    const sentAt = Date.now();
    // PUT and POST always carry JSON (the API refuses them otherwise).
    const sendBody = body !== undefined ? body : method === 'POST' ? {} : undefined;
    const res = await request(`${this.url}${path}`, {
      method,
      headers: { ...headers, ...(sendBody !== undefined ? { 'content-type': 'application/json' } : {}), authorization: `Bearer ${this.token}` },
      body: sendBody !== undefined ? JSON.stringify(sendBody) : undefined,
      dispatcher: this.agent,
      headersTimeout: 120_000,
      bodyTimeout: 120_000,
    });
    const text = await res.body.text();
    const respondedAt = Date.now();
    let json: any;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = { message: text };
    }
    return { status: res.statusCode, json, sentAt, respondedAt };
  }

  /** A request sent again on 5xx or no answer, with backoff from 0.5 s doubling to `maxDelayMs`. */
  async send(method: ApiMethod, path: string, body: unknown, opts: RetryOptions = {}): Promise<ApiAnswer> {
    const attempts = opts.attempts ?? 12;
    for (let attempt = 1; ; attempt++) {
      const delay = Math.min(500 * 2 ** (attempt - 1), opts.maxDelayMs ?? 20_000);
      let answer: ApiAnswer;
      try {
        answer = await this.request(method, path, body, opts.headers);
      } catch (err) {
        if (attempt >= attempts) throw err;
        opts.onRetry?.(0, String(err));
        await sleep(delay);
        continue;
      }
      if (answer.status < 500 || attempt >= attempts) return answer;
      opts.onRetry?.(answer.status, String(answer.json?.message ?? ''));
      await sleep(delay);
    }
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}
