/**
 * The malformed-input corpus (bench/support/malformed-run.ts: over 200 bad
 * specs, API bodies and annotations) sent to the chaos run's own API once the
 * hosts are through: each must be refused with a field error and change
 * nothing. The API is restarted first with power checks off, so the corpus
 * host's history stays still while the corpus reads it.
 */
import type { Client } from '@temporalio/client';
import { LocalSecretStore } from '../../clients/secrets/local-store';
import { historyLengthOf, runMalformedCorpus, setUpCorpusHost, type CorpusResult, type CorpusTarget } from '../support/malformed-run';
import type { MalformedInputs } from './report';
import type { Supervised } from './supervisor';

export async function malformedInputs(opts: {
  api: Supervised;
  apiUrl: string;
  token: string;
  namespace: string;
  secretDir: string;
  secretKey: Buffer;
  temporal: Client;
  seed: number;
}): Promise<MalformedInputs & { failures: CorpusResult['failures'] }> {
  await opts.api.restartWith({ METALFLOW_POWER_CHECK_SECONDS: '0' });
  const target: CorpusTarget = {
    base: opts.apiUrl,
    token: opts.token,
    namespace: opts.namespace,
    secrets: new LocalSecretStore(opts.secretDir, opts.secretKey),
    historyLength: historyLengthOf(opts.temporal),
  };
  const host = await setUpCorpusHost(target);
  const r = await runMalformedCorpus(target, host, { seed: opts.seed, generated: 40 });
  return {
    sent: r.sent + r.annotations.checked,
    rejectedWithFieldError: r.rejectedWithFieldError + r.annotations.rejectedNamingTheAnnotation,
    changedAnything: r.changedAnything,
    failures: r.failures,
  };
}
