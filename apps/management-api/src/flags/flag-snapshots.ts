import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { CompiledFlagSet } from '@flagship/flag-evaluation';
import { CHANNELS, PUBSUB, type PubSub } from '@flagship/redis';
import { FlagsRepository } from './flags.repository';

/** Tenant-environments held; the least recently evaluated is dropped past this. */
const MAX_ENTRIES = 1000;
/**
 * A set older than this is re-read in the background while the old one keeps answering: it heals a
 * change announcement lost while Redis was away, at one query per tenant-environment per period.
 */
const RECONCILE_MS = 15_000;

/** The flags of one tenant-environment as evaluations see them, with each flag's project. */
export interface FlagSetView {
  set: CompiledFlagSet;
  projects: ReadonlyMap<string, string | null>;
}

interface Entry {
  /** The last good load; kept through failed re-reads (Postgres down) and served meanwhile. */
  current: FlagSetView | undefined;
  loadedAt: number;
  /** A change was announced since `current` was read: evaluations wait for the re-read. */
  stale: boolean;
  loading: Promise<FlagSetView> | undefined;
  /** Bumped by every announcement, so a read that raced one is known to be stale already. */
  generation: number;
}

export interface FlagChangedMessage {
  tenantId: string;
  environment: string;
  flagKey: string;
  version: number;
}

/**
 * Compiled flag sets per tenant and environment, so evaluations run from memory with no query.
 * A change announced on Redis (by any replica, this one included, before it answers its PATCH)
 * marks the set stale; the next evaluation waits for one re-read, so it sees the change. With
 * Redis away, sets are still re-read every RECONCILE_MS; with Postgres away, the last good set
 * keeps answering. Bounded: least recently used tenant-environments are dropped.
 */
@Injectable()
export class FlagSnapshots implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('FlagSnapshots');
  private readonly entries = new Map<string, Entry>();
  private unsubscribe: (() => Promise<void>) | undefined;

  constructor(
    private readonly repo: FlagsRepository,
    @Inject(PUBSUB) private readonly pubsub: PubSub,
  ) {}

  onModuleInit(): void {
    // Not awaited: with Redis down, SUBSCRIBE waits in ioredis' queue and start-up must not.
    this.pubsub
      .subscribe(CHANNELS.flagChanged, (m) => {
        const msg = m as Partial<FlagChangedMessage>;
        if (typeof msg.tenantId !== 'string') return;
        if (typeof msg.environment === 'string') this.invalidate(msg.tenantId, msg.environment);
        else this.invalidateTenant(msg.tenantId); // a change to a flag's global fields
      })
      .then(
        (unsubscribe) => {
          this.unsubscribe = unsubscribe;
          // Changes missed while not subscribed: every set is re-read on its next use.
          for (const e of this.entries.values()) this.markStale(e);
        },
        (err: Error) => this.logger.warn(`flag change subscription failed: ${err.message}; sets are reconciled every ${RECONCILE_MS} ms`),
      );
    this.pubsub.onReconnect(() => {
      for (const e of this.entries.values()) this.markStale(e);
    });
  }

  onModuleDestroy(): void {
    // Not awaited: with Redis down, UNSUBSCRIBE waits in ioredis' queue until the connection closes.
    this.unsubscribe?.().catch(() => undefined);
  }

  /** The set when it can answer now without waiting (the hot path); undefined otherwise. */
  peek(tenantId: string, environment: string): FlagSetView | undefined {
    const e = this.entries.get(`${tenantId}/${environment}`);
    if (e === undefined || e.current === undefined || e.stale) return undefined;
    if (Date.now() - e.loadedAt > RECONCILE_MS) this.load(`${tenantId}/${environment}`, e, tenantId, environment).catch(() => undefined);
    return e.current;
  }

  async view(tenantId: string, environment: string): Promise<FlagSetView> {
    const k = `${tenantId}/${environment}`;
    let e = this.entries.get(k);
    if (e === undefined) {
      e = { current: undefined, loadedAt: 0, stale: true, loading: undefined, generation: 0 };
      this.entries.set(k, e);
      if (this.entries.size > MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
    } else {
      // Least recently used order: Map keeps insertion order, so a hit moves to the end.
      this.entries.delete(k);
      this.entries.set(k, e);
    }
    if (e.current !== undefined && !e.stale) {
      if (Date.now() - e.loadedAt > RECONCILE_MS) this.load(k, e, tenantId, environment).catch(() => undefined);
      return e.current;
    }
    try {
      let view = await this.load(k, e, tenantId, environment);
      // A read already under way when the change was announced may predate it: read once more.
      if (e.stale) view = await this.load(k, e, tenantId, environment);
      return view;
    } catch (err) {
      // Postgres away: the last known flags answer rather than nothing.
      if (e.current !== undefined) return e.current;
      throw err;
    }
  }

  get(tenantId: string, environment: string): Promise<CompiledFlagSet> {
    return this.view(tenantId, environment).then((v) => v.set);
  }

  invalidate(tenantId: string, environment: string): void {
    const e = this.entries.get(`${tenantId}/${environment}`);
    if (e !== undefined) this.markStale(e);
  }

  invalidateTenant(tenantId: string): void {
    const prefix = `${tenantId}/`;
    for (const [k, e] of this.entries) if (k.startsWith(prefix)) this.markStale(e);
  }

  private markStale(e: Entry): void {
    e.stale = true;
    e.generation++;
  }

  private load(k: string, e: Entry, tenantId: string, environment: string): Promise<FlagSetView> {
    if (e.loading !== undefined) return e.loading;
    const generation = e.generation;
    const loading = Promise.all([this.repo.definitions(tenantId, environment), this.repo.projectIds(tenantId)])
      .then(([defs, projects]) => {
        const view: FlagSetView = { set: CompiledFlagSet.compile(defs), projects };
        e.current = view;
        e.loadedAt = Date.now();
        // An announcement during the read may not be in it: stay stale, read again next time.
        e.stale = e.generation !== generation;
        return view;
      })
      .finally(() => {
        if (e.loading === loading) e.loading = undefined;
        if (this.entries.get(k) !== e && e.current === undefined) this.entries.delete(k);
      });
    e.loading = loading;
    return loading;
  }
}
