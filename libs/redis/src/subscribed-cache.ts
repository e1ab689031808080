import { Logger } from '@nestjs/common';
import type { Channel } from './channels';
import type { PubSub } from './pubsub';

/** Why a load runs. */
export type LoadReason =
  /** Nothing is held for the key yet. */
  | 'first'
  /** Parts were announced as changed (`changed` names them). */
  | 'changed'
  /** The whole value was announced as changed, or it expired. */
  | 'whole'
  /**
   * The value may be out of date for reasons nobody announced: its periodic reconcile is due, or the
   * subscriber (re)connected, so announcements may have been missed. A loader that can compare cheaply
   * (fingerprints) re-reads only what differs.
   */
  | 'reconcile';

export interface LoadRequest<V> {
  reason: LoadReason;
  /** The last good value (undefined for 'first'). A loader may change it in place and return it. */
  previous: V | undefined;
  /** For 'changed': the parts announced since the last load. */
  changed: ReadonlySet<string>;
}

export interface SubscribedCacheOptions<K, V> {
  /** For logs and status. */
  name: string;
  load: (key: K, request: LoadRequest<V>) => Promise<V>;
  /** The identity of a key (default: String(key)). */
  idOf?: (key: K) => string;
  /**
   * A value older than this is still served while it is reloaded ('reconcile') in the background:
   * it heals announcements lost while the subscriber was away. Default: never.
   */
  reconcileMs?: number;
  /**
   * When a value stops being served (ms since the epoch; absolute, so a value may carry its own
   * deadline, e.g. a token's expiry): past it, reads wait for a load. Default: never.
   */
  expiresAt?: (value: V, loadedAt: number) => number;
  /** Most keys held; the least recently read is dropped past it. Default 10,000. */
  maxEntries?: number;
  /**
   * What a value weighs (its bytes, say), asked after each load; with `maxWeight`, the least
   * recently read values are dropped while all of them together weigh more. Default: nothing weighs.
   */
  weigh?: (value: V) => number;
  maxWeight?: number;
  /**
   * Whether a failed load may be answered with the last good value (a dependency down). Default:
   * always. When false the entry is dropped and the error goes to the readers waiting for it.
   * `wanted` is why the value still needs a load after the failure, counting announcements heard
   * while it ran: 'reconcile' when none was announced and it has not expired, so a holder can serve
   * an unconfirmed value through an outage but not one announced as changed ('whole', 'changed').
   */
  serveStaleOn?: (err: unknown, wanted: LoadReason) => boolean;
  /**
   * Reload an announced change at once in the background, retrying a failure with a capped
   * backoff, and reconcile every `reconcileMs` without waiting for a read: for holders that push
   * changes on (OFREP streams) or that are read synchronously. Default: reload on the next read.
   */
  eager?: boolean;
  /** Longest wait between retries of an eager reload (default 2,000 ms). */
  maxRetryMs?: number;
  /**
   * Runs synchronously once a load's value is held and served again (`peek` returns it), before
   * anything else runs: the place to tell listeners what a load changed.
   */
  onLoaded?: (key: K, value: V, reason: LoadReason) => void;
}

interface Entry<K, V> {
  key: K;
  value: V | undefined;
  /**
   * When it is due for 'reconcile': `reconcileMs` after its last whole load (±10 % in an eager cache,
   * whose timer would otherwise compare every value loaded together at once); Infinity without reconcileMs.
   */
  reconcileAt: number;
  expiresAt: number;
  /** The whole value is to be re-read ('whole'), or compared ('reconcile'). */
  whole: 'whole' | 'reconcile' | undefined;
  /** Parts announced as changed since the last load began. */
  changed: Set<string>;
  loading: Promise<'fresh' | 'stale'> | undefined;
  /** The load under way covers announced changes: until it lands, the value is not served as current. */
  loadingAnnounced: boolean;
  retryMs: number;
  retryTimer: NodeJS.Timeout | undefined;
  /** After a failed load, reads serve the last good value without loading again until then. */
  retryAt: number;
  /** The error of the last load, while it failed. */
  failure: unknown;
  /** What `weigh` said of the value held (0 without one). */
  weight: number;
}

export interface SubscribedCacheStatus {
  name: string;
  entries: number;
  /** What the values held weigh together (`weigh`; 0 without it). */
  weight: number;
  /** Whether every followed channel is subscribed (announcements arrive). */
  subscribed: boolean;
  subscriber: string;
  /** The last failed load while a stale value is being served, until a load succeeds. */
  lastError?: { at: string; message: string };
}

/**
 * A cache kept current over the change feed: the one mechanism every app uses to hold what lives in
 * Postgres or Redis and changes rarely (flag sets, tenants, callers, revoked clients, signing keys).
 *
 * - Followed channels (`follow`) are subscribed at `start()` without blocking start-up (with Redis
 *   down, SUBSCRIBE waits in ioredis' queue); their handlers turn announcements into `invalidate`
 *   (the whole value or some parts of it).
 * - An invalidated value is not served again: the next read waits for its reload (so a writer reads
 *   its own change); `eager` starts that reload at once, and the value is not served as current
 *   until it lands.
 * - Whenever the subscriber (re)connects, announcements may have been missed: every value goes to
 *   'reconcile'. So does a value older than `reconcileMs`, reloaded in the background while it is
 *   still served.
 * - A failed load (Postgres down) keeps serving the last good value (`serveStaleOn`), and says so
 *   once per outage in the log and in `status()`.
 * - One load at a time per key; concurrent readers share it; an announcement that arrives during a
 *   load makes the next read load again (the load may have read before the change).
 */
export class SubscribedCache<K, V> {
  private readonly logger: Logger;
  private readonly entries = new Map<string, Entry<K, V>>();
  private readonly follows: Array<(pubsub: PubSub) => Promise<() => Promise<void>>> = [];
  private readonly unsubscribes: Array<Promise<(() => Promise<void>) | undefined>> = [];
  private subscribedCount = 0;
  private reconcileTimer: NodeJS.Timeout | undefined;
  private lastError: { at: string; message: string } | undefined;
  private closed = false;
  private readonly idOf: (key: K) => string;
  private readonly maxEntries: number;
  private totalWeight = 0;
  /** Ids whose values are not dropped to make room (`hold`), with how many holders each has. */
  private readonly holds = new Map<string, number>();

  constructor(
    private readonly pubsub: PubSub | undefined,
    private readonly options: SubscribedCacheOptions<K, V>,
  ) {
    this.logger = new Logger(options.name);
    this.idOf = options.idOf ?? ((key) => String(key));
    this.maxEntries = options.maxEntries ?? 10_000;
  }

  /** Turns this channel's announcements into invalidations (`handler` calls invalidate...). Before `start()`. */
  follow<T>(channel: Channel<T>, handler: (message: T, cache: this) => void): this {
    this.follows.push((pubsub) => pubsub.subscribe(channel, (m) => handler(m, this)));
    return this;
  }

  /** Subscribes (not awaited) and starts the reconcile timer of an eager cache. */
  start(): this {
    const pubsub = this.pubsub;
    if (pubsub !== undefined && this.follows.length > 0) {
      pubsub.onReconnect(() => this.reconcileAll('the Redis subscriber reconnected'));
      for (const follow of this.follows) {
        const sub = follow(pubsub).then(
          (off) => {
            this.subscribedCount++;
            // Announcements made before the subscription took effect were missed.
            if (!this.closed) this.reconcileAll();
            return off;
          },
          (err: unknown) => {
            this.logger.warn(`a subscription failed (${errorText(err)}); values are reconciled every ${this.options.reconcileMs ?? '∞'} ms`);
            return undefined;
          },
        );
        this.unsubscribes.push(sub);
      }
    }
    if (this.options.eager && this.options.reconcileMs !== undefined) {
      // Each value falls due at its own time, spread by the jitter, so that a thousand values held
      // are not reconciled in one burst that would take every database connection at once.
      this.reconcileTimer = setInterval(() => {
        const now = Date.now();
        for (const e of this.entries.values()) if (e.value !== undefined && e.reconcileAt <= now && e.whole === undefined) this.mark(e, 'reconcile');
      }, Math.max(10, Math.min(this.options.reconcileMs / 10, 60_000)));
      this.reconcileTimer.unref();
    }
    return this;
  }

  /** Not awaited by callers at shutdown: with Redis down, UNSUBSCRIBE waits in ioredis' queue. */
  close(): void {
    this.closed = true;
    clearInterval(this.reconcileTimer);
    for (const e of this.entries.values()) clearTimeout(e.retryTimer);
    for (const sub of this.unsubscribes) sub.then((off) => off?.(), () => undefined).catch(() => undefined);
  }

  /** The value, loading or reloading it when it cannot be served as it is. */
  async get(key: K): Promise<V> {
    const e = this.touch(key);
    if (this.servable(e)) {
      this.reconcileIfDue(e);
      return e.value!;
    }
    // Just failed: the last good value, without hammering what is down (unless serveStaleOn refuses
    // it now, e.g. after an announcement heard since).
    if (e.value !== undefined && e.retryAt > Date.now() && this.mayServeStale(e.failure, e)) return e.value;
    // An announcement during the load makes it load again; three rounds bound a storm of them.
    for (let round = 0; round < 3; round++) {
      if ((await this.load(e)) === 'stale') break;
      if (e.whole !== 'whole' && e.changed.size === 0) break;
    }
    if (e.value === undefined) throw new Error(`${this.options.name}: no value after loading`);
    return e.value;
  }

  /**
   * The value when it can be served now without waiting (the hot path), else undefined (call
   * `get`). `stale: true` serves the last good value whatever its state (a synchronous reader that
   * prefers an old answer to none), and starts its reload.
   */
  peek(key: K, opts?: { stale?: boolean }): V | undefined {
    const e = this.entries.get(this.idOf(key));
    if (e === undefined) return undefined;
    if (this.servable(e)) {
      this.reconcileIfDue(e);
      return e.value;
    }
    if (opts?.stale && e.value !== undefined) {
      if (e.loading === undefined && e.retryAt <= Date.now()) void this.load(e).catch(() => undefined);
      return e.value;
    }
    return undefined;
  }

  /** Keys held, with their last good values. */
  *held(): IterableIterator<[K, V]> {
    for (const e of this.entries.values()) if (e.value !== undefined) yield [e.key, e.value];
  }

  /**
   * Keeps `key`'s value from being dropped to make room (maxEntries, maxWeight) until the returned
   * release is called: for a holder that must hear every change of it (a stream), without reading
   * it again and again to stay recent. Held values may take the cache past its bounds; the holder
   * bounds how many it holds.
   */
  hold(key: K): () => void {
    const id = this.idOf(key);
    this.holds.set(id, (this.holds.get(id) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const n = (this.holds.get(id) ?? 1) - 1;
      if (n <= 0) this.holds.delete(id);
      else this.holds.set(id, n);
    };
  }

  /** `parts`: only these parts of the value changed; none: the whole value. Unknown keys are ignored. */
  invalidate(key: K, parts?: Iterable<string>): void {
    const e = this.entries.get(this.idOf(key));
    if (e === undefined) return;
    if (parts === undefined) this.mark(e, 'whole');
    else {
      for (const p of parts) e.changed.add(p);
      this.kick(e);
    }
  }

  /**
   * Every key held or being loaded that `match` accepts is invalidated: whole, or only `parts`
   * (an announcement about many keys, e.g. a change seen by every environment of a tenant).
   */
  invalidateWhere(match: (key: K, value: V | undefined) => boolean, parts?: Iterable<string>): void {
    const list = parts === undefined ? undefined : [...parts];
    for (const e of this.entries.values()) {
      if (!match(e.key, e.value)) continue;
      if (list === undefined) this.mark(e, 'whole');
      else {
        for (const p of list) e.changed.add(p);
        this.kick(e);
      }
    }
  }

  /** Drops keys outright (the next read loads afresh; a load under way is not kept). */
  delete(key: K): void {
    const e = this.entries.get(this.idOf(key));
    if (e === undefined) return;
    this.drop(this.idOf(key), e);
  }

  deleteWhere(match: (key: K, value: V | undefined) => boolean): void {
    for (const [id, e] of this.entries) {
      if (!match(e.key, e.value)) continue;
      this.drop(id, e);
    }
  }

  clear(): void {
    this.deleteWhere(() => true);
  }

  /** Changes a held value in place from an announcement that carries the change itself. */
  update(key: K, change: (value: V) => void): void {
    const e = this.entries.get(this.idOf(key));
    if (e?.value !== undefined) change(e.value);
  }

  /** Every value is compared with its source ('reconcile'), e.g. after announcements may have been lost. */
  reconcileAll(why?: string): void {
    if (why !== undefined && this.entries.size > 0) this.logger.log(`reconciling ${this.entries.size} held value(s): ${why}`);
    for (const e of this.entries.values()) if (e.value !== undefined) this.mark(e, 'reconcile');
  }

  status(): SubscribedCacheStatus {
    return {
      name: this.options.name,
      entries: this.entries.size,
      weight: this.totalWeight,
      subscribed: this.follows.length === 0 || this.subscribedCount >= this.follows.length,
      subscriber: this.pubsub?.subscriberStatus ?? 'none',
      ...(this.lastError ? { lastError: this.lastError } : {}),
    };
  }

  private touch(key: K): Entry<K, V> {
    const id = this.idOf(key);
    let e = this.entries.get(id);
    if (e === undefined) {
      e = {
        key,
        value: undefined,
        reconcileAt: Infinity,
        expiresAt: Infinity,
        whole: undefined,
        changed: new Set(),
        loading: undefined,
        loadingAnnounced: false,
        retryMs: 0,
        retryTimer: undefined,
        retryAt: 0,
        failure: undefined,
        weight: 0,
      };
      this.entries.set(id, e);
      if (this.entries.size > this.maxEntries) {
        for (const [otherId, other] of this.entries) {
          if (other === e || this.holds.has(otherId)) continue;
          this.drop(otherId, other);
          break;
        }
      }
    } else {
      // Least recently read order: a Map keeps insertion order, so a read moves the entry last.
      this.entries.delete(id);
      this.entries.set(id, e);
      e.key = key;
    }
    return e;
  }

  /** Held, not invalidated, not expired. A value due for 'reconcile' is still served meanwhile. */
  private servable(e: Entry<K, V>): boolean {
    return e.value !== undefined && e.whole !== 'whole' && e.changed.size === 0 && !e.loadingAnnounced && e.expiresAt > Date.now();
  }

  private reconcileIfDue(e: Entry<K, V>): void {
    if (e.loading !== undefined || e.retryAt > Date.now()) return;
    if (e.whole === 'reconcile' || Date.now() > e.reconcileAt) {
      if (e.whole === undefined) e.whole = 'reconcile';
      void this.load(e).catch(() => undefined);
    }
  }

  private mark(e: Entry<K, V>, how: 'whole' | 'reconcile'): void {
    if (e.whole !== 'whole') e.whole = how;
    this.kick(e);
  }

  /** An eager cache reloads what is held at once. */
  private kick(e: Entry<K, V>): void {
    if (!this.options.eager || this.closed || e.value === undefined || e.retryTimer !== undefined) return;
    void this.settle(e);
  }

  /**
   * Loads until nothing is pending (an eager reload), retrying failures with a capped backoff. A load
   * already under way (a reader's, or a status peek's: /readyz) has taken the pending work off the
   * entry, so it is waited for first: judged by the loop's condition alone, nothing was pending and
   * no retry was set, and when that load failed nobody loaded again (orep-server kept its old flags
   * after Postgres came back; the subscribed-cache spec reproduces it).
   */
  private async settle(e: Entry<K, V>): Promise<void> {
    let outcome: 'fresh' | 'stale' | 'failed' = e.loading === undefined ? 'fresh' : await e.loading.catch(() => 'failed' as const);
    while (outcome === 'fresh' && !this.closed && this.entries.get(this.idOf(e.key)) === e && (e.whole !== undefined || e.changed.size > 0)) {
      outcome = await this.load(e).catch(() => 'failed' as const);
    }
    if (outcome === 'fresh') return;
    if (this.closed || this.entries.get(this.idOf(e.key)) !== e || e.retryTimer !== undefined) return;
    e.retryTimer = setTimeout(() => {
      e.retryTimer = undefined;
      void this.settle(e);
    }, Math.max(e.retryMs, 100));
    e.retryTimer.unref();
  }

  /**
   * One load at a time per entry; what it covers is taken from the entry when it starts. 'stale':
   * it failed and the last good value stays served; rejects when there is none to serve.
   */
  private load(e: Entry<K, V>): Promise<'fresh' | 'stale'> {
    if (e.loading !== undefined) return e.loading;
    const loading = this.run(e).finally(() => {
      if (e.loading === loading) e.loading = undefined;
    });
    e.loading = loading;
    return loading;
  }

  private drop(id: string, e: Entry<K, V>): void {
    clearTimeout(e.retryTimer);
    this.entries.delete(id);
    this.totalWeight -= e.weight;
    e.weight = 0;
  }

  /** After a load of `e`: its new weight counted, and the least recently read others dropped while all weigh too much. */
  private weighed(e: Entry<K, V>, value: V): void {
    if (this.options.weigh === undefined || this.entries.get(this.idOf(e.key)) !== e) return;
    const weight = this.options.weigh(value);
    this.totalWeight += weight - e.weight;
    e.weight = weight;
    const max = this.options.maxWeight;
    if (max === undefined) return;
    for (const [id, other] of this.entries) {
      if (this.totalWeight <= max) break;
      if (other !== e && other.weight > 0 && !this.holds.has(id)) this.drop(id, other);
    }
  }

  private mayServeStale(err: unknown, e: Entry<K, V>): boolean {
    if (this.options.serveStaleOn === undefined) return true;
    const wanted: LoadReason = e.whole === 'whole' || e.expiresAt <= Date.now() ? 'whole' : e.changed.size > 0 ? 'changed' : 'reconcile';
    return this.options.serveStaleOn(err, wanted);
  }

  private loaded(key: K, value: V, reason: LoadReason): void {
    try {
      this.options.onLoaded?.(key, value, reason);
    } catch (err) {
      this.logger.warn(`onLoaded failed: ${errorText(err)}`);
    }
  }

  private async run(e: Entry<K, V>): Promise<'fresh' | 'stale'> {
    const previous = e.value;
    const expired = previous !== undefined && e.expiresAt <= Date.now();
    const reason: LoadReason = previous === undefined ? 'first' : e.whole === 'whole' || expired ? 'whole' : e.changed.size > 0 ? 'changed' : 'reconcile';
    // A 'changed' load does not cover a pending 'reconcile': it stays for the next load.
    const whole = reason === 'changed' ? undefined : e.whole;
    const changed = e.changed;
    if (reason !== 'changed') e.whole = undefined;
    e.changed = new Set();
    e.loadingAnnounced = reason === 'changed' || reason === 'whole';
    try {
      const value = await this.options.load(e.key, { reason, previous, changed });
      const now = Date.now();
      e.value = value;
      e.loadingAnnounced = false;
      // A 'changed' load is partial: the whole value was last compared when it was last loaded whole.
      if (reason !== 'changed' && this.options.reconcileMs !== undefined) {
        e.reconcileAt = now + this.options.reconcileMs * (this.options.eager ? 0.9 + 0.2 * Math.random() : 1);
      }
      e.expiresAt = this.options.expiresAt?.(value, now) ?? Infinity;
      e.retryMs = 0;
      e.retryAt = 0;
      e.failure = undefined;
      this.weighed(e, value);
      if (this.lastError !== undefined) {
        this.lastError = undefined;
        this.logger.log('loads succeed again');
      }
      this.loaded(e.key, value, reason);
      return 'fresh';
    } catch (err) {
      e.loadingAnnounced = false;
      // Not covered after all: what it was to cover is wanted still.
      if (whole !== undefined && e.whole !== 'whole') e.whole = whole;
      if (reason === 'whole' && e.whole === undefined) e.whole = 'whole';
      for (const p of changed) e.changed.add(p);
      const serveStale = this.mayServeStale(err, e);
      if (!serveStale || previous === undefined) {
        if (!serveStale && this.entries.get(this.idOf(e.key)) === e) this.drop(this.idOf(e.key), e);
        throw err;
      }
      const first = this.lastError === undefined;
      this.lastError = { at: new Date().toISOString(), message: errorText(err) };
      if (first) this.logger.warn(`a load failed (${errorText(err)}); serving the last good value meanwhile`);
      // The readers get the last good value; the entry stays pending and is loaded again after a
      // capped backoff (by the next read after it, or by an eager cache's retry timer).
      e.retryMs = Math.min(Math.max(e.retryMs * 2, 100), this.options.maxRetryMs ?? 2000);
      e.retryAt = Date.now() + e.retryMs;
      e.failure = err;
      return 'stale';
    }
  }
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
