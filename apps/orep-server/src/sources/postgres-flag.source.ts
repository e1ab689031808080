import { Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { CHANNELS, type PubSub } from '@flagship/redis';
import { type FlagSource, type FlagSourceStatus, FlagsChangedListeners, type FlagsChangedListener } from './flag-source';
import { FlagSnapshot } from '@flagship/flag-evaluation';
import type { FlagsRepository, StoredFlag } from './flags.repository';

export interface PostgresFlagSourceOptions {
  tenantId: string;
  environment: string;
  /** Between full re-syncs, which heal change messages lost while Redis was away. */
  reconcileMs: number;
  /** Longest wait between attempts while Postgres does not answer. */
  maxRetryMs?: number;
}

/**
 * Flags of one tenant and environment from Postgres, kept current by management-api's change
 * messages (`flag-changed` on Redis: `{ tenantId, environment, flagKey, version }`): each message
 * re-reads that one flag, and a flag that is gone was deleted.
 *
 * Messages can be lost (Redis restarts, the subscriber reconnects), so the source also re-syncs in
 * full: on every subscriber (re)connection and every `reconcileMs`. A re-sync compares cheap
 * per-flag fingerprints and re-reads only what differs. While Postgres or Redis is down, the last
 * good snapshot keeps being served and the work waits, retried with a capped backoff.
 *
 * All reads run one at a time (`pump`), so a re-sync can never undo a newer single-flag change.
 * Messages that arrive meanwhile are batched into the next read.
 */
export class PostgresFlagSource implements FlagSource, OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('PostgresFlagSource');
  private current: FlagSnapshot | null = null;
  private fingerprints = new Map<string, string>();
  private readonly pending = new Set<string>();
  private fullSyncWanted = false;
  private pumping: Promise<void> | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private retryMs = 0;
  private reconcileTimer: NodeJS.Timeout | undefined;
  private syncedAt: number | undefined;
  private lastFullLoadMs: number | undefined;
  private lastError: { at: string; message: string } | undefined;
  private stopped = false;
  private readonly listeners = new FlagsChangedListeners();

  /**
   * `pubsub` is owned from here on (closed at shutdown). A reconnection of it means messages may have
   * been lost, so it triggers a full re-sync (PubSub.onReconnect tells a reconnection from the first
   * connection however late the hook is registered).
   */
  constructor(
    private readonly repository: FlagsRepository,
    private readonly pubsub: PubSub,
    private readonly options: PostgresFlagSourceOptions,
  ) {
    pubsub.onReconnect(() => void this.requestFullSync('the Redis subscriber reconnected'));
  }

  get snapshot(): FlagSnapshot | null {
    return this.current;
  }

  /**
   * Subscribes first, then loads, so that no change falls between the two. Start-up waits for the
   * first load only: if Postgres fails it, the app starts unready and keeps trying.
   */
  async onModuleInit(): Promise<void> {
    // Not awaited: with Redis down, SUBSCRIBE waits in ioredis' queue until it is back.
    this.pubsub.subscribe(CHANNELS.flagChanged, (message) => this.onMessage(message)).then(
      () => {
        // Subscribed only after the first load: changes in between are caught by a re-sync.
        if (this.current && !this.stopped) void this.requestFullSync('subscribed to flag changes');
      },
      (err: unknown) => this.recordError('subscribing to flag changes', err),
    );
    this.fullSyncWanted = true;
    await this.pump();
    this.reconcileTimer = setInterval(() => this.requestFullSync(), this.options.reconcileMs);
    this.reconcileTimer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearInterval(this.reconcileTimer);
    clearTimeout(this.retryTimer);
    // No UNSUBSCRIBE: with Redis down it would wait in ioredis' queue forever; closing the
    // connection is enough. A read in flight gets a moment to finish before the pool closes under it
    // (then it fails, harmlessly: the source is stopped).
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.pumping, new Promise((resolve) => (timer = setTimeout(resolve, 2000)))]);
    clearTimeout(timer);
    await this.pubsub.close();
  }

  onChange(listener: FlagsChangedListener): () => void {
    return this.listeners.add(listener);
  }

  status(): FlagSourceStatus {
    return {
      kind: 'postgres',
      tenantId: this.options.tenantId,
      environment: this.options.environment,
      flags: this.current?.size ?? 0,
      subscriber: this.pubsub.subscriberStatus,
      pendingChanges: this.pending.size,
      ...(this.current ? { loadedAt: new Date(this.current.updatedAt).toISOString() } : {}),
      ...(this.syncedAt !== undefined ? { syncedAt: new Date(this.syncedAt).toISOString() } : {}),
      ...(this.lastFullLoadMs !== undefined ? { lastFullLoadMs: this.lastFullLoadMs } : {}),
      ...(this.lastError ? { lastError: this.lastError } : {}),
    };
  }

  /** Re-reads everything that differs from Postgres; resolves when the queue is drained. */
  requestFullSync(why?: string): Promise<void> {
    if (this.stopped) return Promise.resolve();
    if (why) this.logger.log(`re-syncing flags: ${why}`);
    this.fullSyncWanted = true;
    return this.kick();
  }

  private onMessage(message: unknown): void {
    if (typeof message !== 'object' || message === null) return;
    const m = message as { tenantId?: unknown; environment?: unknown; flagKey?: unknown };
    if (typeof m.tenantId !== 'string' || m.tenantId.toLowerCase() !== this.options.tenantId) return;
    // No environment: a change to the flag's global fields (name, variations...) seen everywhere.
    if (m.environment !== undefined && m.environment !== null && m.environment !== this.options.environment) return;
    if (typeof m.flagKey === 'string' && m.flagKey !== '') this.pending.add(m.flagKey);
    else this.fullSyncWanted = true; // a tenant-wide change
    void this.kick();
  }

  /** Starts the pump unless it runs already or waits out a Postgres failure. */
  private kick(): Promise<void> {
    if (this.stopped || this.retryTimer) return this.pumping ?? Promise.resolve();
    return this.pump();
  }

  private pump(): Promise<void> {
    if (this.pumping) return this.pumping;
    const run = this.drain().finally(() => {
      if (this.pumping === run) this.pumping = undefined;
      // Work that arrived as the loop ended (it cannot, between I/O events, but cheap to be sure).
      if (!this.stopped && !this.retryTimer && (this.fullSyncWanted || this.pending.size > 0)) void this.pump();
    });
    this.pumping = run;
    return run;
  }

  private async drain(): Promise<void> {
    try {
      while (!this.stopped && (this.fullSyncWanted || this.pending.size > 0)) {
        if (this.fullSyncWanted || !this.current) {
          this.fullSyncWanted = false;
          try {
            await this.fullSync();
          } catch (err) {
            this.fullSyncWanted = true;
            throw err;
          }
        } else {
          const keys = [...this.pending];
          this.pending.clear();
          try {
            await this.refresh(keys);
          } catch (err) {
            for (const k of keys) this.pending.add(k);
            throw err;
          }
        }
        this.recovered();
      }
    } catch (err) {
      this.recordError('reading flags from Postgres', err);
      this.scheduleRetry();
    }
  }

  private scheduleRetry(): void {
    if (this.stopped) return;
    this.retryMs = Math.min(Math.max(this.retryMs * 2, 100), this.options.maxRetryMs ?? 2000);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      void this.pump();
    }, this.retryMs);
    this.retryTimer.unref();
  }

  private async fullSync(): Promise<void> {
    const { tenantId, environment } = this.options;
    const started = performance.now();
    if (!this.current) {
      const flags = await this.repository.findAll(tenantId, environment);
      this.fingerprints = new Map(flags.map((f) => [f.key, f.fingerprint]));
      this.current = FlagSnapshot.of(flags.map((f) => f.definition));
      this.listeners.emit({ keys: undefined, at: this.current.updatedAt });
      this.lastFullLoadMs = Math.round(performance.now() - started);
      this.logger.log(`loaded ${this.current.size} flags of tenant ${tenantId} (${environment}) in ${this.lastFullLoadMs} ms`);
    } else {
      const stored = await this.repository.fingerprints(tenantId, environment);
      const stale: string[] = [];
      for (const [key, fingerprint] of stored) if (this.fingerprints.get(key) !== fingerprint) stale.push(key);
      for (const key of this.fingerprints.keys()) if (!stored.has(key)) stale.push(key);
      if (stale.length > 0) {
        await this.refresh(stale);
        this.logger.log(`re-sync found ${stale.length} flag(s) out of date, now current`);
      }
      this.lastFullLoadMs = Math.round(performance.now() - started);
    }
    this.syncedAt = Date.now();
  }

  /** Re-reads these flags; those without a row are gone. One snapshot swap for the whole batch. */
  private async refresh(keys: readonly string[]): Promise<void> {
    const { tenantId, environment } = this.options;
    const found = await this.repository.findByKeys(tenantId, environment, keys);
    const current = this.current;
    if (!current) return;
    const changed: StoredFlag[] = [];
    const foundKeys = new Set<string>();
    for (const flag of found) {
      foundKeys.add(flag.key);
      if (this.fingerprints.get(flag.key) !== flag.fingerprint || !current.has(flag.key)) changed.push(flag);
    }
    const removed = keys.filter((k) => !foundKeys.has(k) && (this.fingerprints.has(k) || current.has(k)));
    if (changed.length === 0 && removed.length === 0) return; // a repeated message
    for (const k of removed) this.fingerprints.delete(k);
    for (const f of changed) this.fingerprints.set(f.key, f.fingerprint);
    current.apply(
      changed.map((f) => f.definition),
      removed,
    );
    this.listeners.emit({ keys: [...changed.map((f) => f.key), ...removed], at: current.updatedAt });
  }

  private recovered(): void {
    this.retryMs = 0;
    if (this.lastError === undefined) return;
    this.lastError = undefined;
    this.logger.log(`flags are current again (${this.current?.size ?? 0} flags)`);
  }

  private recordError(what: string, err: unknown): void {
    const message = `${what} failed: ${err instanceof Error ? err.message : String(err)}`;
    const first = this.lastError === undefined;
    this.lastError = { at: new Date().toISOString(), message };
    // One line per outage, not one per retry.
    if (first) {
      this.logger.error(
        this.current ? `${message}; still serving the ${this.current.size} flags loaded before` : `${message}; no flags to serve yet`,
      );
    }
  }
}
