import { Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { LiveFlagSet } from '@flagship/flag-evaluation';
import { type EvaluationRecorder, FlagStore, type FlagStoreRepository } from '@flagship/flag-store';
import type { PubSub } from '@flagship/redis';
import type { FlagSource, FlagSourceStatus, FlagsChangedListener } from './flag-source';

export interface PostgresFlagSourceOptions {
  tenantId: string;
  environment: string;
  /** Between reconciles with Postgres, which heal change announcements lost while Redis was away. */
  reconcileMs: number;
  /** Longest wait between attempts while Postgres does not answer. */
  maxRetryMs?: number;
  /** A flag over this many bytes is not served (the rest are); default DEFAULT_FLAG_MAX_BYTES. */
  maxFlagBytes?: number;
  /** A set over this many bytes is refused: not loaded, or the last good one kept. Default: none. */
  maxSetBytes?: number;
}

/**
 * One tenant and environment of the flag store (libs/flag-store), served as this app's FlagSource:
 * the store keeps the set current over the change feed (per-flag re-reads, fingerprint reconciles
 * every `reconcileMs` and after a reconnection, the last good set through an outage); this adapter
 * holds its live set for the evaluation paths, which read it on every request without waiting.
 */
export class PostgresFlagSource implements FlagSource, OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('PostgresFlagSource');
  private readonly store: FlagStore;
  /** The store changes this set in place and never replaces it: held once loaded. */
  private current: LiveFlagSet | null = null;
  /** The first load's failure, until it succeeds (the store reports later ones). */
  private firstLoadError: { at: string; message: string } | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private stopped = false;

  /** `pubsub` is owned from here on (closed at shutdown). */
  constructor(
    repository: FlagStoreRepository,
    private readonly pubsub: PubSub,
    private readonly options: PostgresFlagSourceOptions,
    /** Where evaluations are noted for the stale-flags list; none: not recorded. */
    private readonly recorder?: Pick<EvaluationRecorder, 'record'>,
  ) {
    this.store = new FlagStore(repository, pubsub, {
      name: 'PostgresFlagSource',
      reconcileMs: options.reconcileMs,
      maxEntries: 1,
      maxRetryMs: options.maxRetryMs,
      maxFlagBytes: options.maxFlagBytes,
      maxSetBytes: options.maxSetBytes,
      // The one set this server has: a refusal keeps serving the flags it had (and /readyz says why).
      keepLastGoodWhenTooLarge: true,
    });
  }

  get liveSet(): LiveFlagSet | null {
    return this.current;
  }

  evaluated(flagKey: string): void {
    this.recorder?.record(this.options.tenantId, this.options.environment, flagKey);
  }

  /**
   * Subscribes first, then loads, so that no change falls between the two. Start-up waits for the
   * first load only: if Postgres fails it, the app starts unready and keeps trying.
   */
  async onModuleInit(): Promise<void> {
    this.store.start();
    await this.firstLoad();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    this.store.close();
    // No UNSUBSCRIBE: with Redis down it would wait in ioredis' queue forever; closing the connection is enough.
    await this.pubsub.close();
  }

  /** A listener of the store itself: no relay between the store and whoever pushes changes on. */
  onChange(listener: FlagsChangedListener): () => void {
    const { tenantId, environment } = this.options;
    return this.store.onChange((change) => {
      if (change.tenantId !== tenantId || change.environment !== environment) return;
      // The first load may be heard before firstLoad() sees it land.
      this.current ??= this.store.peek(tenantId, environment, { stale: true })?.set ?? null;
      listener({ keys: change.keys, at: change.at });
    });
  }

  status(): FlagSourceStatus {
    const { tenantId, environment } = this.options;
    const status = this.store.status(tenantId, environment);
    return {
      kind: 'postgres',
      tenantId,
      environment,
      ...status,
      ...(this.current === null && this.firstLoadError ? { lastError: this.firstLoadError } : {}),
    };
  }

  private async firstLoad(retryMs = 0): Promise<void> {
    if (this.stopped) return;
    const { tenantId, environment } = this.options;
    const started = performance.now();
    try {
      const view = await this.store.view(tenantId, environment);
      this.current = view.set;
      this.firstLoadError = undefined;
      this.logger.log(`loaded ${view.set.size} flags of tenant ${tenantId} (${environment}) in ${Math.round(performance.now() - started)} ms`);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      // One line per outage, not one per retry.
      if (this.firstLoadError === undefined) this.logger.error(`${message}; no flags to serve yet, retrying`);
      this.firstLoadError = { at: new Date().toISOString(), message };
      const next = Math.min(Math.max(retryMs * 2, 100), this.options.maxRetryMs ?? 2000);
      this.retryTimer = setTimeout(() => void this.firstLoad(next), next);
      this.retryTimer.unref();
    }
  }
}
