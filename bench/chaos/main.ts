/**
 * `npm run chaos`: N hosts through their whole lifecycle on the real stack
 * while workers, the API, the controller, Temporal and Ironic are killed,
 * Ironic loses its database, a proxy fails a share of Ironic requests and
 * BMCs stop answering; then the checks (no host lost or stuck, no deploy or
 * reboot twice, no re-provisioning after the database loss, no secret in any
 * history or log). Exit status 0 only when every check passes.
 * `--scenario pivot`: a pivot between two planes under kills instead (pivot.ts);
 * `--scenario site-move`: hosts moved between sites under kills (site-move.ts).
 * `npm run chaos -- --help` for the options.
 */
import { parseChaosArgs, USAGE } from './options';
import { runPivotChaos } from './pivot';
import { runSiteMoveChaos } from './site-move';
import { runChaos } from './run';

async function main(): Promise<number> {
  const opts = parseChaosArgs(process.argv.slice(2));
  if (opts === 'help') {
    console.log(USAGE);
    return 0;
  }
  if (opts.scenario === 'pivot') return runPivotChaos(opts);
  if (opts.scenario === 'site-move') return runSiteMoveChaos(opts);
  const result = await runChaos(opts);
  return result.passed ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err instanceof Error ? (err.stack ?? err.message) : err);
    process.exit(2);
  },
);
