import { Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { FlagSnapshot } from '@flagship/flag-evaluation';
import { CHANNELS, type LoadReason, type LoadRequest, type PubSub, SubscribedCache } from '@flagship/redis';
import type { FlagStoreRepository, StoredFlag } from './flag-store.repository';

/** The flags of one tenant-environment as evaluations see them, with each flag's project. */
export interface FlagSetView {
  /** Changed in place, one synchronous `apply` per batch, so an evaluation never sees half of one. */
  readonly set: FlagSnapshot;
  /** flag key -> its project (null: none). */
  readonly projects: ReadonlyMap<string, string | null>;
}

/** What changed in a held set: these keys (changed, added or removed), or any (undefined: a whole new set). */
export interface FlagSetChanged {
  tenantId: string;
  environment: string;
  keys: readonly string[] | undefined;
  /** The rows applied (changed or added flags, as read), when `keys` is set: a listener needs no read of its own. */
  flags: readonly StoredFlag[];
  /** The keys taken out (deleted flags), when `keys` is set. */
  removed: readonly string[];
  /** When the change was applied to the held set (ms since the epoch): the set's `updatedAt`. */
  at: number;
}

export type FlagSetListener = (change: FlagSetChanged) => void;

/** What /readyz tells of one held set. */
export interface FlagSetStatus {
  flags: number;
  /** When the flags held last changed (ISO 8601). */
  loadedAt?: string;
  /** When they were last compared with Postgres as a whole (a first load, a reconcile). */
  syncedAt?: string;
  /** How long the last whole load or comparison took, in ms. */
  lastFullLoadMs?: number;
  /** The last failure to read Postgres while the last good set is served. */
  lastError?: { at: string; message: string };
  /** The change feed's subscriber: 'ready' once subscribed and connected. */
  subscriber: string;
}

export interface FlagStoreOptions {
  /** For logs and status (default 'FlagStore'). */
  name?: string;
  /**
   * A held set is compared with Postgres this often (fingerprints, no jsonb), and after every
   * reconnection of the subscriber: it heals announcements lost while Redis was away.
   */
  reconcileMs: number;
  /** Tenant-environments held; the least recently read is dropped past it. */
  maxEntries: number;
  /** Longest wait between retries while Postgres does not answer (default 2,000 ms). */
  maxRetryMs?: number;
}

interface FlagSet extends FlagSetView {
  readonly set: FlagSnapshot;
  readonly projects: Map<string, string | null>;
  readonly fingerprints: Map<string, string>;
  syncedAt: number;
  lastFullLoadMs: number;
  /** What the last load applied, told to listeners once the set is served again. */
  applied: Applied;
}

/**
 * The one in-memory flag store: the flags of many tenant-environments, each compiled flag by flag
 * on first use (FlagSnapshot), kept current over the change feed (`flag-changed`) on the one
 * mechanism for that, SubscribedCache:
 *
 * - an announced change re-reads that flag alone, at once (eager: push streams listen), and the set
 *   is not served as current until the re-read lands, so a writer that invalidates before it answers
 *   reads its own change; an announcement without a flag key re-reads the whole set;
 * - every `reconcileMs`, and whenever the subscriber (re)connects, the set's fingerprints are compared
 *   with Postgres and only what differs is re-read: lost announcements heal;
 * - with Postgres down, the last good set is served (and says so in `status`), re-reads are retried
 *   with a capped backoff;
 * - a change is applied in place (compiled flags that did not change stay compiled; prerequisites
 *   resolve through the set at evaluation time), and listeners hear the exact keys applied.
 *
 * Keys are `${tenantId}/${environment}` strings, so the hot path (`peek`) allocates nothing; tenant
 * ids are lower-case (as Postgres prints uuids).
 */
export class FlagStore implements OnModuleInit, OnModuleDestroy {
  private readonly logger: Logger;
  private readonly cache: SubscribedCache<string, FlagSet>;
  private readonly listeners = new Set<FlagSetListener>();

  constructor(
    private readonly repository: FlagStoreRepository,
    pubsub: PubSub | undefined,
    options: FlagStoreOptions,
  ) {
    const name = options.name ?? 'FlagStore';
    this.logger = new Logger(name);
    this.cache = new SubscribedCache<string, FlagSet>(pubsub, {
      name,
      load: (id, request) => this.load(id, request),
      reconcileMs: options.reconcileMs,
      maxEntries: options.maxEntries,
      maxRetryMs: options.maxRetryMs,
      eager: true,
      onLoaded: (id, value, reason) => this.loaded(id, value, reason),
    }).follow(CHANNELS.flagChanged, (m, cache) => {
      const tenantId = m.tenantId.toLowerCase();
      const parts = m.flagKey === undefined ? undefined : [m.flagKey];
      if (m.environment !== undefined) cache.invalidate(idOf(tenantId, m.environment), parts);
      // No environment: a change to the flag's global fields, seen in every environment.
      else cache.invalidateWhere((id) => tenantOf(id) === tenantId, parts);
    });
  }

  /** Subscribes to the change feed (not awaited: start-up does not wait for Redis). */
  start(): this {
    this.cache.start();
    return this;
  }

  close(): void {
    this.cache.close();
  }

  onModuleInit(): void {
    this.start();
  }

  onModuleDestroy(): void {
    this.close();
  }

  /**
   * The set when it can answer now without waiting (the hot path); undefined otherwise (call
   * `view`). `stale: true`: the last good set whatever its state (for a reader that never waits).
   */
  peek(tenantId: string, environment: string, opts?: { stale?: boolean }): FlagSetView | undefined {
    return this.cache.peek(idOf(tenantId, environment), opts);
  }

  /** The set, loading it or waiting for an announced change's re-read; the last good one while Postgres is down. */
  view(tenantId: string, environment: string): Promise<FlagSetView> {
    return this.cache.get(idOf(tenantId, environment));
  }

  /**
   * The writer's own replica, before it answers: `flagKey` changed (else the whole set), so the next
   * evaluation waits for the re-read rather than answer from before the write.
   */
  invalidate(tenantId: string, environment: string, flagKey?: string): void {
    this.cache.invalidate(idOf(tenantId, environment), flagKey === undefined ? undefined : [flagKey]);
  }

  /**
   * `listener` runs after each change applied to a held set, synchronously once the load that
   * applied it has landed: `peek(tenantId, environment, { stale: true })` returns the changed set
   * (a plain `peek` may not, when a later announcement is already pending). Returns the unsubscribe.
   */
  onChange(listener: FlagSetListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  status(tenantId: string, environment: string): FlagSetStatus {
    const set = this.cache.peek(idOf(tenantId, environment), { stale: true }) as FlagSet | undefined;
    const cache = this.cache.status();
    return {
      flags: set?.set.size ?? 0,
      ...(set
        ? { loadedAt: new Date(set.set.updatedAt).toISOString(), syncedAt: new Date(set.syncedAt).toISOString(), lastFullLoadMs: set.lastFullLoadMs }
        : {}),
      ...(cache.lastError ? { lastError: cache.lastError } : {}),
      subscriber: cache.subscribed ? cache.subscriber : 'subscribing',
    };
  }

  /** Tenant-environments held (for metrics and tests). */
  get size(): number {
    return this.cache.status().entries;
  }

  private async load(id: string, request: LoadRequest<FlagSet>): Promise<FlagSet> {
    try {
      return await this.read(id, request);
    } catch (err) {
      // Said as the outage it is: /readyz and the log show it.
      throw new Error(`reading flags from Postgres failed: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    }
  }

  private async read(id: string, { reason, previous, changed }: LoadRequest<FlagSet>): Promise<FlagSet> {
    const tenantId = tenantOf(id);
    const environment = id.slice(tenantId.length + 1);
    const started = performance.now();
    if (previous === undefined) {
      const flags = await this.repository.findAll(tenantId, environment);
      const lastFullLoadMs = Math.round(performance.now() - started);
      if (flags.length >= 1000) this.logger.log(`loaded ${flags.length} flags of ${id} in ${lastFullLoadMs} ms`);
      return {
        set: FlagSnapshot.of(flags.map((f) => f.definition)),
        projects: new Map(flags.map((f) => [f.key, f.projectId])),
        fingerprints: new Map(flags.map((f) => [f.key, f.fingerprint])),
        syncedAt: Date.now(),
        lastFullLoadMs,
        applied: NOTHING,
      };
    }
    if (reason === 'changed') {
      const keys = [...changed];
      previous.applied = apply(previous, keys, await this.repository.findByKeys(tenantId, environment, keys));
      return previous;
    }
    if (reason === 'whole') {
      // A change to the whole set was announced: read every flag, apply what differs.
      const flags = await this.repository.findAll(tenantId, environment);
      previous.applied = apply(previous, new Set([...previous.fingerprints.keys(), ...flags.map((f) => f.key)]), flags);
    } else {
      const stored = await this.repository.fingerprints(tenantId, environment);
      const stale: string[] = [];
      for (const [key, fingerprint] of stored) if (previous.fingerprints.get(key) !== fingerprint) stale.push(key);
      for (const key of previous.fingerprints.keys()) if (!stored.has(key)) stale.push(key);
      previous.applied = stale.length > 0 ? apply(previous, stale, await this.repository.findByKeys(tenantId, environment, stale)) : NOTHING;
      const n = previous.applied.flags.length + previous.applied.removed.length;
      if (n > 0) this.logger.log(`reconcile of ${id} found ${n} flag(s) out of date, now current`);
    }
    previous.syncedAt = Date.now();
    previous.lastFullLoadMs = Math.round(performance.now() - started);
    return previous;
  }

  private loaded(id: string, value: FlagSet, reason: LoadReason): void {
    const applied = value.applied;
    value.applied = NOTHING;
    const keys = reason === 'first' ? undefined : [...applied.flags.map((f) => f.key), ...applied.removed];
    if (keys !== undefined && keys.length === 0) return; // nothing differed (a repeated announcement)
    if (this.listeners.size === 0) return;
    const tenantId = tenantOf(id);
    const change: FlagSetChanged = {
      tenantId,
      environment: id.slice(tenantId.length + 1),
      keys,
      flags: keys === undefined ? [] : applied.flags,
      removed: keys === undefined ? [] : applied.removed,
      at: value.set.updatedAt,
    };
    for (const listener of this.listeners) {
      try {
        listener(change);
      } catch (err) {
        this.logger.warn(`a flag change listener failed: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
  }
}

interface Applied {
  flags: StoredFlag[];
  removed: string[];
}

const NOTHING: Applied = { flags: [], removed: [] };

function idOf(tenantId: string, environment: string): string {
  return `${tenantId}/${environment}`;
}

/** Tenant ids hold no '/', environment keys may. */
function tenantOf(id: string): string {
  return id.slice(0, id.indexOf('/'));
}

/**
 * Puts the re-read flags of `keys` in and takes out those of `keys` that are gone, in one
 * synchronous step; returns what differed (nothing for a repeated announcement).
 */
function apply(held: FlagSet, keys: Iterable<string>, found: readonly StoredFlag[]): Applied {
  const changed = found.filter((f) => held.fingerprints.get(f.key) !== f.fingerprint || !held.set.has(f.key));
  const foundKeys = new Set(found.map((f) => f.key));
  const removed: string[] = [];
  for (const key of keys) if (!foundKeys.has(key) && (held.set.has(key) || held.fingerprints.has(key))) removed.push(key);
  if (changed.length === 0 && removed.length === 0) return NOTHING;
  held.set.apply(
    changed.map((f) => f.definition),
    removed,
  );
  for (const key of removed) {
    held.fingerprints.delete(key);
    held.projects.delete(key);
  }
  for (const f of changed) {
    held.fingerprints.set(f.key, f.fingerprint);
    held.projects.set(f.key, f.projectId);
  }
  return { flags: changed, removed };
}
