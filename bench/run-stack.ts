/**
 * What a bench run starts for itself (the bench stack's Ironic and sushy, the
 * Temporal of its profile, the worker and API children) and their teardown:
 * at the end of the run, when a start fails half-way, and on SIGINT/SIGTERM
 * (a PostgreSQL and a Temporal server left running would load every later
 * run on this 2-core machine). What was already running is left alone.
 */
import { stack, stackRunning, type Child, type StackService } from './procs';
import type { TemporalProfile } from './temporal-profile';

export class RunStack {
  /** Stack services this run started. */
  readonly started: StackService[] = [];
  temporalStarted = false;
  private readonly children: Child[] = [];
  /** Services started elsewhere for this run (the kube-apiserver of --driver k8s), stopped with the rest. */
  private readonly others: (() => void)[] = [];
  private stopped = false;
  private signalled = false;
  // Ctrl-C reaches the run twice (from the terminal and relayed by tsx's parent): the second must not kill the teardown.
  private readonly onSignal = (sig: NodeJS.Signals): void => {
    if (this.signalled) return;
    this.signalled = true;
    this.log(`${sig}: stopping what this run started (its hosts stay in Ironic and Temporal: npm run bench -- cleanup <namespace>)`);
    for (const c of this.children) c.proc.kill('SIGTERM');
    this.stop();
    process.exit(sig === 'SIGINT' ? 130 : 143);
  };

  constructor(
    readonly temporal: TemporalProfile,
    private readonly keep: boolean,
    private readonly log: (msg: string) => void,
  ) {}

  /** Starts what is not running: `services` of the bench stack (with `env`), then Temporal. */
  start(services: StackService[], env: Record<string, string>, portsNote: string): void {
    process.on('SIGINT', this.onSignal);
    process.on('SIGTERM', this.onSignal);
    const before = stackRunning();
    const missing = services.filter((s) => !before.has(s));
    try {
      if (missing.length > 0) {
        this.log(`starting the bench stack (${missing.join(', ')}) on ports ${portsNote}`);
        // Recorded first: a start that fails half-way may have left some of them running.
        this.started.push(...missing);
        stack(['start', ...missing], env);
      } else {
        this.log('bench stack already running');
      }
      // The profile's own start stops what it started when it fails.
      this.temporalStarted = this.temporal.ensureRunning();
    } catch (err) {
      this.stop();
      throw err;
    }
    this.log(`Temporal: ${this.temporal.name} at ${this.temporal.address}${this.temporalStarted ? ' (started)' : ' (already running)'}`);
  }

  /** A service restarted by the run (e.g. sushy on another systems file) counts as started by it. */
  markStarted(svc: StackService): void {
    if (!this.started.includes(svc)) this.started.push(svc);
  }

  /** Killed on SIGINT/SIGTERM; the run stops them itself otherwise. */
  track(child: Child): Child {
    this.children.push(child);
    return child;
  }

  /** Stopped at the end with the stack (not with --keep-stack), and on SIGINT/SIGTERM. */
  alsoStop(stop: () => void): void {
    this.others.push(stop);
  }

  /** Stops what this run started unless --keep-stack; once. */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    if (!this.signalled) {
      process.removeListener('SIGINT', this.onSignal);
      process.removeListener('SIGTERM', this.onSignal);
    }
    if (this.keep) return;
    for (const stop of this.others) stop();
    if (this.started.length > 0) {
      this.log(`stopping the bench stack services this run started (${this.started.join(', ')})`);
      try {
        stack(['stop', ...this.started]);
      } catch (err) {
        this.log(`stack stop failed: ${String(err)}`);
      }
    }
    if (this.temporalStarted) {
      this.log(`stopping Temporal (${this.temporal.name}), started by this run`);
      try {
        this.temporal.stop();
      } catch (err) {
        this.log(`Temporal stop failed: ${String(err)}`);
      }
    }
  }
}
