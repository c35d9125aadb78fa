/**
 * List-and-watch with resourceVersion for one resource (one stream per watched
 * namespace, or one cluster-wide): keeps a cache, tells
 * the controller which keys changed, re-lists on 410 Gone and reconnects with
 * backoff when the watch drops (API server restart). One list at start and per
 * re-list, never per event.
 */
import { PARTIAL_METADATA_LIST, type KubeRest } from '../../clients/kubernetes/kube-rest';

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    generation?: number;
    deletionTimestamp?: string;
    finalizers?: string[];
    annotations?: Record<string, string>;
    labels?: Record<string, string>;
    creationTimestamp?: string;
    /** Who wrote which fields when (bmo-guard.ts reads the managers and times). */
    managedFields?: { manager?: string; operation?: string; time?: string }[];
  };
}

export const keyOf = (o: KubeObject): string => `${o.metadata.namespace ?? ''}/${o.metadata.name}`;

export interface InformerOptions {
  /** List and watch metadata only (PartialObjectMetadata): for Secrets, whose data the controller never needs. */
  metadataOnly?: boolean;
  minBackoffMs?: number;
  maxBackoffMs?: number;
  log?: (message: string) => void;
}

/**
 * The paths an informer lists and watches for the watched namespaces: the
 * cluster-wide path when every namespace is watched, otherwise one namespaced
 * path each (RBAC may then be a Role per namespace; a cluster-wide watch with
 * a filter would need the ClusterRole, e.g. read access to every Secret).
 */
export function watchPaths(namespaces: readonly string[] | undefined, pathOf: (namespace?: string) => string): string[] {
  return namespaces ? namespaces.map((ns) => pathOf(ns)) : [pathOf()];
}

/** One cache filled by one list-and-watch per path (a path per watched namespace, or one cluster-wide). */
export class Informer<T extends KubeObject> {
  readonly cache = new Map<string, T>();
  private readonly streams: PathStream<T>[];

  constructor(rest: KubeRest, paths: string | readonly string[], onChange: (key: string) => void, opts: InformerOptions = {}) {
    this.streams = (typeof paths === 'string' ? [paths] : paths).map((path) => new PathStream(rest, path, this.cache, onChange, opts));
  }

  /** Resolves once the first list of every path is in the cache. */
  async start(): Promise<void> {
    await Promise.all(this.streams.map((s) => s.start()));
  }

  stop(): void {
    for (const s of this.streams) s.stop();
  }
}

class PathStream<T extends KubeObject> {
  /** The keys this path put in the shared cache: a re-list drops only its own. */
  private readonly own = new Set<string>();
  private resourceVersion = '';
  private stopped = false;
  private abort?: AbortController;
  private backoff: number;
  private readonly minBackoff: number;
  private readonly maxBackoff: number;
  private readonly log: (m: string) => void;
  private readonly metadataOnly: boolean;

  constructor(
    private readonly rest: KubeRest,
    private readonly path: string,
    private readonly cache: Map<string, T>,
    private readonly onChange: (key: string) => void,
    opts: InformerOptions,
  ) {
    this.minBackoff = opts.minBackoffMs ?? 250;
    this.maxBackoff = opts.maxBackoffMs ?? 10_000;
    this.backoff = this.minBackoff;
    this.log = opts.log ?? (() => undefined);
    this.metadataOnly = opts.metadataOnly ?? false;
  }

  async start(): Promise<void> {
    await this.relist();
    void this.watchLoop();
  }

  /** Replaces the cache from a list; keys that changed or vanished are reported. */
  private async relist(): Promise<void> {
    for (;;) {
      try {
        const list = await this.rest.call<{ items: T[] | null; metadata: { resourceVersion: string } }>(
          'GET',
          this.path,
          this.metadataOnly ? { accept: PARTIAL_METADATA_LIST } : {},
        );
        const seen = new Set<string>();
        // A metadata-only list with nothing in it says `"items": null`, not [].
        for (const item of list.items ?? []) {
          const key = keyOf(item);
          seen.add(key);
          this.own.add(key);
          const old = this.cache.get(key);
          this.cache.set(key, item);
          if (old?.metadata.resourceVersion !== item.metadata.resourceVersion) this.onChange(key);
        }
        for (const key of [...this.own]) {
          if (!seen.has(key)) {
            this.own.delete(key);
            this.cache.delete(key);
            this.onChange(key);
          }
        }
        this.resourceVersion = list.metadata.resourceVersion;
        this.backoff = this.minBackoff;
        return;
      } catch (err) {
        if (this.stopped) return;
        this.log(`list ${this.path} failed: ${(err as Error).message}; retrying in ${this.backoff} ms`);
        await this.sleep();
      }
    }
  }

  private sleep(): Promise<void> {
    const ms = this.backoff;
    this.backoff = Math.min(this.backoff * 2, this.maxBackoff);
    return new Promise((r) => setTimeout(r, ms));
  }

  private async watchLoop(): Promise<void> {
    while (!this.stopped) {
      const outcome = await this.watchOnce();
      if (this.stopped) return;
      if (outcome === 'gone') {
        this.log(`watch ${this.path}: resourceVersion ${this.resourceVersion} is too old (410); re-listing`);
        await this.relist();
      } else if (outcome === 'error') {
        await this.sleep();
      }
    }
  }

  private watchOnce(): Promise<'closed' | 'gone' | 'error'> {
    return new Promise((resolve) => {
      let gone = false;
      const key = `WATCH ${this.path}`;
      this.rest.counts.set(key, this.rest.count(key) + 1);
      (this.metadataOnly ? this.rest.metadataWatch : this.rest.watch)
        .watch(
          this.path,
          { resourceVersion: this.resourceVersion, allowWatchBookmarks: true },
          (phase: string, obj: T & { code?: number }) => {
            if (phase === 'ERROR') {
              if (obj.code === 410) gone = true;
              return;
            }
            this.backoff = this.minBackoff;
            if (obj.metadata?.resourceVersion) this.resourceVersion = obj.metadata.resourceVersion;
            if (phase === 'BOOKMARK') return;
            const k = keyOf(obj);
            if (phase === 'DELETED') {
              this.cache.delete(k);
              this.own.delete(k);
            } else {
              this.cache.set(k, obj);
              this.own.add(k);
            }
            this.onChange(k);
          },
          (err: unknown) => {
            if (gone) resolve('gone');
            else if (err) {
              this.log(`watch ${this.path} ended: ${(err as Error).message ?? String(err)}`);
              resolve('error');
            } else resolve('closed');
          },
        )
        .then(
          (abort) => {
            this.abort = abort;
            if (this.stopped) abort.abort();
          },
          (err: unknown) => {
            this.log(`watch ${this.path} failed to start: ${(err as Error).message}`);
            resolve('error');
          },
        );
    });
  }

  stop(): void {
    this.stopped = true;
    this.abort?.abort();
  }
}
