import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { FlagSnapshot } from '@flagship/flag-evaluation';
import { CHANNELS, PUBSUB, type PubSub } from '@flagship/redis';
import { FlagsRepository, type HeldFlag } from './flags.repository';

/** Tenant-environments held; the least recently evaluated is dropped past this. */
const MAX_ENTRIES = 1000;
/**
 * A set older than this is compared with Postgres in the background (fingerprints, no jsonb) while
 * it keeps answering, and what differs is re-read: it heals a change announcement lost while Redis
 * was away, at one light query per tenant-environment per period.
 */
const RECONCILE_MS = 15_000;

/** The flags of one tenant-environment as evaluations see them, with each flag's project. */
export interface FlagSetView {
  /** Changed in place, one synchronous `apply` per batch, so an evaluation never sees half of one. */
  set: FlagSnapshot;
  projects: ReadonlyMap<string, string | null>;
}

interface Entry {
  /** The last good load; kept through failed re-reads (Postgres down) and served meanwhile. */
  current: { set: FlagSnapshot; projects: Map<string, string | null> } | undefined;
  fingerprints: Map<string, string>;
  /** When `current` was last compared with Postgres as a whole. */
  loadedAt: number;
  /** Re-read everything (nothing held yet, a change announcement may have been missed, a tenant-wide change). */
  full: boolean;
  /** Flags announced as changed since the last read: evaluations wait for their re-read. */
  pending: Set<string>;
  loading: Promise<void> | undefined;
}

/**
 * Flags per tenant and environment held in memory, so evaluations run with no query. Kept current
 * as orep-server's Postgres source keeps its own (FlagSnapshot, per-flag refresh, fingerprints): a
 * change announced on Redis (by any replica, this one included, before it answers its PATCH) marks
 * that flag pending, and the next evaluation waits for that one flag's re-read, so it sees the
 * change; the other flags stay compiled (a flag compiles on its first evaluation, and prerequisites
 * resolve through the snapshot at evaluation time, so no other flag needs compiling again). With
 * Redis away, sets are reconciled every RECONCILE_MS; with Postgres away, the last good set keeps
 * answering. Bounded: least recently used tenant-environments are dropped.
 */
/** What changed in a held set: these keys (changed, added or removed), or any (undefined: re-read whole). */
export interface FlagSetChanged {
  tenantId: string;
  environment: string;
  keys: readonly string[] | undefined;
  /** When the change was applied to the held set (ms since the epoch). */
  at: number;
}

@Injectable()
export class FlagSnapshots implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('FlagSnapshots');
  private readonly entries = new Map<string, Entry>();
  private readonly listeners = new Set<(change: FlagSetChanged) => void>();
  private unsubscribe: (() => Promise<void>) | undefined;

  constructor(
    private readonly repo: FlagsRepository,
    @Inject(PUBSUB) private readonly pubsub: PubSub,
  ) {}

  onModuleInit(): void {
    // Not awaited: with Redis down, SUBSCRIBE waits in ioredis' queue and start-up must not.
    this.pubsub
      .subscribe(CHANNELS.flagChanged, (m) => {
        if (m.environment !== undefined) this.invalidate(m.tenantId, m.environment, m.flagKey);
        else this.invalidateTenant(m.tenantId); // a change to a flag's global fields
      })
      .then(
        (unsubscribe) => {
          this.unsubscribe = unsubscribe;
          // Changes missed while not subscribed: every set is re-read on its next use.
          for (const e of this.entries.values()) e.full = true;
        },
        (err: Error) => this.logger.warn(`flag change subscription failed: ${err.message}; sets are reconciled every ${RECONCILE_MS} ms`),
      );
    this.pubsub.onReconnect(() => {
      for (const e of this.entries.values()) e.full = true;
    });
  }

  onModuleDestroy(): void {
    // Not awaited: with Redis down, UNSUBSCRIBE waits in ioredis' queue until the connection closes.
    this.unsubscribe?.().catch(() => undefined);
  }

  /**
   * `listener` runs after each change applied to a held set (synchronously after it). A held set
   * re-reads an announced change at once, so listeners hear it without waiting for an evaluation.
   */
  onChange(listener: (change: FlagSetChanged) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private emit(change: FlagSetChanged): void {
    for (const l of this.listeners) {
      try {
        l(change);
      } catch (err) {
        this.logger.warn(`a flag change listener failed: ${(err as Error).message}`);
      }
    }
  }

  /** The set when it can answer now without waiting (the hot path); undefined otherwise. */
  peek(tenantId: string, environment: string): FlagSetView | undefined {
    const k = `${tenantId}/${environment}`;
    const e = this.entries.get(k);
    if (e === undefined || e.current === undefined || e.full || e.pending.size > 0) return undefined;
    if (Date.now() - e.loadedAt > RECONCILE_MS) this.load(k, e, tenantId, environment).catch(() => undefined);
    return e.current;
  }

  async view(tenantId: string, environment: string): Promise<FlagSetView> {
    const k = `${tenantId}/${environment}`;
    let e = this.entries.get(k);
    if (e === undefined) {
      e = { current: undefined, fingerprints: new Map(), loadedAt: 0, full: true, pending: new Set(), loading: undefined };
      this.entries.set(k, e);
      if (this.entries.size > MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
    } else {
      // Least recently used order: Map keeps insertion order, so a hit moves to the end.
      this.entries.delete(k);
      this.entries.set(k, e);
    }
    if (e.current !== undefined && !e.full && e.pending.size === 0) {
      if (Date.now() - e.loadedAt > RECONCILE_MS) this.load(k, e, tenantId, environment).catch(() => undefined);
      return e.current;
    }
    try {
      await this.load(k, e, tenantId, environment);
      // A read already under way when the change was announced may predate it: read once more.
      if (e.full || e.pending.size > 0) await this.load(k, e, tenantId, environment);
    } catch (err) {
      // Postgres away: the last known flags answer rather than nothing.
      if (e.current === undefined) throw err;
    }
    return e.current!;
  }

  /** `flagKey`: only that flag changed; without it, every flag of the tenant-environment is re-read. */
  invalidate(tenantId: string, environment: string, flagKey?: string): void {
    const e = this.entries.get(`${tenantId}/${environment}`);
    if (e === undefined) return;
    if (flagKey === undefined) e.full = true;
    else e.pending.add(flagKey);
    this.reload(`${tenantId}/${environment}`, e, tenantId, environment);
  }

  invalidateTenant(tenantId: string): void {
    const prefix = `${tenantId}/`;
    for (const [k, e] of this.entries) {
      if (!k.startsWith(prefix)) continue;
      e.full = true;
      this.reload(k, e, tenantId, k.slice(prefix.length));
    }
  }

  /** Re-reads a held set's announced changes now, in the background (a failure is retried by the next use). */
  private reload(k: string, e: Entry, tenantId: string, environment: string): void {
    if (e.current === undefined) return;
    const again = (): Promise<void> => this.load(k, e, tenantId, environment).then(() => (e.full || e.pending.size > 0 ? again() : undefined));
    // A read under way may predate the announcement: after it, read once more.
    void (e.loading ?? Promise.resolve()).catch(() => undefined).then(again).catch(() => undefined);
  }

  /**
   * One read at a time per entry: everything when nothing is held or a full read is wanted; else
   * the pending flags, plus, when the set is due for reconciling, those whose fingerprint differs.
   */
  private load(k: string, e: Entry, tenantId: string, environment: string): Promise<void> {
    if (e.loading !== undefined) return e.loading;
    const loading = this.read(e, tenantId, environment).finally(() => {
      if (e.loading === loading) e.loading = undefined;
      if (this.entries.get(k) !== e && e.current === undefined) this.entries.delete(k);
    });
    e.loading = loading;
    return loading;
  }

  private async read(e: Entry, tenantId: string, environment: string): Promise<void> {
    if (e.current === undefined || e.full) {
      e.full = false;
      e.pending.clear();
      try {
        const flags = await this.repo.heldFlags(tenantId, environment);
        e.current = { set: FlagSnapshot.of(flags.map((f) => f.definition)), projects: new Map(flags.map((f) => [f.key, f.projectId])) };
        e.fingerprints = new Map(flags.map((f) => [f.key, f.fingerprint]));
        e.loadedAt = Date.now();
        this.emit({ tenantId, environment, keys: undefined, at: e.loadedAt });
      } catch (err) {
        e.full = true;
        throw err;
      }
      return;
    }
    const keys = new Set(e.pending);
    e.pending.clear();
    try {
      const reconcile = Date.now() - e.loadedAt > RECONCILE_MS;
      if (reconcile) {
        const stored = await this.repo.fingerprints(tenantId, environment);
        for (const [key, fingerprint] of stored) if (e.fingerprints.get(key) !== fingerprint) keys.add(key);
        for (const key of e.fingerprints.keys()) if (!stored.has(key)) keys.add(key);
      }
      if (keys.size > 0) {
        const applied = this.refresh(e, keys, await this.repo.heldFlags(tenantId, environment, [...keys]));
        if (applied.length > 0) this.emit({ tenantId, environment, keys: applied, at: Date.now() });
      }
      if (reconcile) e.loadedAt = Date.now();
    } catch (err) {
      for (const key of keys) e.pending.add(key);
      throw err;
    }
  }

  /** Puts the re-read flags in and takes out those of `keys` that are gone: one synchronous step. */
  private refresh(e: Entry, keys: ReadonlySet<string>, found: HeldFlag[]): string[] {
    const current = e.current!;
    const changed = found.filter((f) => e.fingerprints.get(f.key) !== f.fingerprint || !current.set.has(f.key));
    const foundKeys = new Set(found.map((f) => f.key));
    const removed = [...keys].filter((key) => !foundKeys.has(key) && current.set.has(key));
    if (changed.length === 0 && removed.length === 0) return []; // a repeated message
    current.set.apply(
      changed.map((f) => f.definition),
      removed,
    );
    for (const key of removed) {
      e.fingerprints.delete(key);
      current.projects.delete(key);
    }
    for (const f of changed) {
      e.fingerprints.set(f.key, f.fingerprint);
      current.projects.set(f.key, f.projectId);
    }
    return [...changed.map((f) => f.key), ...removed];
  }
}
