/**
 * Searches everything Temporal holds about a workflow for secrets, with every
 * payload decoded first. JSON.stringify of a fetched history shows payload
 * bytes as numbers, so a plaintext password never matches it: a check built
 * on that cannot fail. This one walks the history protos, decodes each
 * Payload (through the codecs, if any, then the payload converter) and keeps
 * every other string as it is (failure messages, stack traces), so a hit says
 * where the secret was.
 *
 * Covered: every run of the workflow (continue-as-new, followed backwards
 * from the latest run), every child workflow started in any of them
 * (recursively), and the pending activities' heartbeat details of running
 * workflows (heartbeats reach history only inside a timeout failure).
 */
import type { Client } from '@temporalio/client';
import { defaultPayloadConverter, type Payload, type PayloadCodec } from '@temporalio/common';

export interface DecodedText {
  /** Workflow id, run id and the path inside the event (e.g. `#5 activityTaskScheduledEventAttributes.input.payloads.0`). */
  where: string;
  text: string;
}

export interface SecretHit {
  secret: string;
  where: string;
}

type Walked = { payloads: { where: string; payload: Payload }[]; strings: DecodedText[] };

const isPayload = (v: object): v is Payload =>
  'data' in v && (v as { data?: unknown }).data instanceof Uint8Array && 'metadata' in v;

/** Every Payload and every plain string below `value`, with its path. */
function walk(value: unknown, where: string, out: Walked): void {
  if (value === null || value === undefined) return;
  if (typeof value === 'string') {
    out.strings.push({ where, text: value });
    return;
  }
  if (value instanceof Uint8Array) {
    // Bytes that are not a Payload's data: keep their text too, so nothing is skipped.
    out.strings.push({ where, text: Buffer.from(value).toString('utf8') });
    return;
  }
  if (typeof value !== 'object') return;
  if (isPayload(value)) {
    out.payloads.push({ where, payload: value });
    return;
  }
  const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v] as const) : Object.entries(value);
  for (const [k, v] of entries) walk(v, where ? `${where}.${k}` : k, out);
}

async function decodePayloads(items: Walked['payloads'], codecs: PayloadCodec[]): Promise<DecodedText[]> {
  const out: DecodedText[] = [];
  for (const { where, payload } of items) {
    let decoded: Payload = payload;
    for (const codec of [...codecs].reverse()) decoded = (await codec.decode([decoded]))[0] ?? decoded;
    let text: string;
    try {
      // A payload holding `undefined` stringifies to undefined: no text.
      text = JSON.stringify(defaultPayloadConverter.fromPayload(decoded)) ?? '';
    } catch {
      // An encoding the converter does not know (e.g. encrypted, no codec given): its bytes as text.
      text = Buffer.from(decoded.data ?? new Uint8Array()).toString('utf8');
    }
    out.push({ where: `${where} (payload)`, text });
    // The metadata too (e.g. an encoding or key id should never carry a secret either).
    for (const [k, v] of Object.entries(decoded.metadata ?? {})) {
      out.push({ where: `${where}.metadata.${k}`, text: Buffer.from(v).toString('utf8') });
    }
  }
  return out;
}

/** Decoded text of every run of `workflowId` and of every child workflow they started. */
export async function decodedHistoryTexts(
  client: Client,
  workflowId: string,
  opts: { codecs?: PayloadCodec[] } = {},
): Promise<DecodedText[]> {
  const codecs = opts.codecs ?? [];
  const texts: DecodedText[] = [];
  const seen = new Set<string>();
  const pending: { workflowId: string; runId?: string }[] = [{ workflowId }];
  while (pending.length > 0) {
    const next = pending.shift()!;
    const key = `${next.workflowId}/${next.runId ?? 'latest'}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const handle = client.workflow.getHandle(next.workflowId, next.runId);
    const description = await handle.describe();
    const runId = description.runId;
    if (next.runId === undefined) seen.add(`${next.workflowId}/${runId}`);
    const history = await handle.fetchHistory();
    const walked: Walked = { payloads: [], strings: [] };
    (history.events ?? []).forEach((event, i) => walk(event, `${next.workflowId} ${runId} #${i + 1}`, walked));
    // Pending activities' heartbeat details, and the memo/search attributes as the server holds them now.
    walk(description.raw, `${next.workflowId} ${runId} describe`, walked);
    texts.push(...walked.strings, ...(await decodePayloads(walked.payloads, codecs)));
    for (const event of history.events ?? []) {
      const child = event.startChildWorkflowExecutionInitiatedEventAttributes?.workflowId;
      if (child) pending.push({ workflowId: child });
      const previous = event.workflowExecutionStartedEventAttributes?.continuedExecutionRunId;
      if (previous) pending.push({ workflowId: next.workflowId, runId: previous });
    }
  }
  return texts;
}

/** Where each secret appears in the decoded texts (empty when none does). */
export function findSecrets(texts: DecodedText[], secrets: string[]): SecretHit[] {
  const hits: SecretHit[] = [];
  for (const secret of secrets.filter((s) => s.length > 0)) {
    for (const t of texts) if (t.text.includes(secret)) hits.push({ secret, where: t.where });
  }
  return hits;
}

/** Decodes and searches in one call: every place any of `secrets` appears in what Temporal holds for `workflowIds`. */
export async function secretsInHistories(
  client: Client,
  workflowIds: string[],
  secrets: string[],
  opts: { codecs?: PayloadCodec[] } = {},
): Promise<{ hits: SecretHit[]; texts: DecodedText[] }> {
  const texts = (await Promise.all(workflowIds.map((id) => decodedHistoryTexts(client, id, opts)))).flat();
  return { hits: findSecrets(texts, secrets), texts };
}
