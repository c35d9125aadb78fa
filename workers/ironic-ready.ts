/**
 * The worker's first word with Ironic. Ironic too old for metalflow is a
 * configuration error: the worker stops with it. Ironic not answering yet
 * (starting, restarting, behind a load balancer that is not ready) is not:
 * the worker waits, saying so, instead of exiting and being restarted in a
 * loop (a chaos run saw a worker started during an Ironic outage exit with
 * "Headers Timeout Error").
 */
import { ironicMayPass, type IronicClient } from '../clients/ironic/client';

export interface WaitOptions {
  log: (line: string) => void;
  /** First pause after a failed attempt, doubled up to maxDelayMs. */
  initialDelayMs?: number;
  maxDelayMs?: number;
  sleep?: (ms: number) => Promise<void>;
}

export async function waitForIronic(ironic: IronicClient, opts: WaitOptions): Promise<string> {
  const sleep = opts.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  let delay = opts.initialDelayMs ?? 1000;
  for (let attempt = 1; ; attempt++) {
    try {
      const version = await ironic.microversion();
      if (attempt > 1) opts.log(`Ironic answers (API ${version}) after ${attempt} attempts`);
      return version;
    } catch (err) {
      if (!ironicMayPass(err)) throw err;
      opts.log(`waiting for Ironic (attempt ${attempt}, next in ${Math.round(delay / 1000)} s): ${err.message}`);
      await sleep(delay);
      delay = Math.min(delay * 2, opts.maxDelayMs ?? 30_000);
    }
  }
}
