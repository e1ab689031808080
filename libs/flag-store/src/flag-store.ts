import { Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { DEFAULT_FLAG_MAX_BYTES, flagDefinitionBytes, LiveFlagSet, type SegmentDefinition, utf8Length } from '@flagship/flag-evaluation';
import { CHANNELS, type LoadReason, type LoadRequest, type PubSub, SubscribedCache } from '@flagship/redis';
import type { FlagStoreReads, StoredFlag, StoredSegment } from './flag-store.repository';

/** One flag of a held set as read, refused ones too. */
export interface HeldFlag {
  /** Changes whenever the flag, its environment row or its project changes. */
  readonly fingerprint: string;
  /** What its definition takes (flagDefinitionBytes). */
  readonly bytes: number;
  /** Its definition as JSON, with `keepJson` and when served (not refused): what a flag-data stream sends. */
  readonly json: string | undefined;
}

/** The flags of one tenant-environment as evaluations see them, with each flag's project. */
export interface FlagSetView {
  /** Changed in place, one synchronous `apply` per batch, so an evaluation never sees half of one. */
  readonly set: LiveFlagSet;
  /** flag key -> its project (null: none), of refused flags too. */
  readonly projects: ReadonlyMap<string, string | null>;
  /** Flags left out because their definition is over `maxFlagBytes`: key -> its bytes. */
  readonly refused: ReadonlyMap<string, number>;
  /** flag key -> the flag as held, refused ones too; changed in place with `set`, read-only here. */
  readonly rows: ReadonlyMap<string, HeldFlag>;
  /** segment key -> the segment as held (what flags' segmentMatch clauses name); changed in place, read-only here. */
  readonly segments: ReadonlyMap<string, HeldSegment>;
}

/** One segment of a held set. */
export interface HeldSegment {
  readonly definition: SegmentDefinition;
  readonly fingerprint: string;
  /** What its JSON takes. */
  readonly bytes: number;
  /** Its definition as JSON, with `keepJson`: what a flag-data stream sends. */
  readonly json: string | undefined;
}

/**
 * A tenant-environment whose flags take more than a set may (`maxSetBytes`): refused, not held.
 * `read` false: the sizes stored with the flags said so, and the flags themselves were not read.
 */
export class FlagSetTooLargeError extends Error {
  override readonly name = 'FlagSetTooLargeError';

  constructor(
    readonly tenantId: string,
    readonly environment: string,
    readonly bytes: number,
    readonly limit: number,
    readonly read: boolean,
  ) {
    super(`the flags of tenant ${tenantId} in ${environment} take ${bytes} bytes, over the ${limit} bytes one environment's flags may take; refused`);
  }
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
  /** The segments changed or added (as read), with `keys` set (possibly empty) and any segment changed. */
  segments?: readonly StoredSegment[];
  /** The keys of segments taken out, with `keys` set and any segment changed. */
  removedSegments?: readonly string[];
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
  /** What the set's definitions take (flagDefinitionBytes), refused ones included. */
  bytes?: number;
  /** Flags not served because their definition is over `maxFlagBytes`: key -> bytes. */
  refused?: Record<string, number>;
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
  /** A flag whose definition is over this (flagDefinitionBytes) is left out of its set, logged and told in `refused`. Default DEFAULT_FLAG_MAX_BYTES. */
  maxFlagBytes?: number;
  /**
   * A set whose flags take more is refused: not read when the sizes stored with the flags say so,
   * not changed when a change would take it past. Default: no bound.
   */
  maxSetBytes?: number;
  /** Bytes of all the sets held; the least recently read are dropped past it. Default: no bound. */
  maxBytes?: number;
  /**
   * A set refused as too large: true keeps serving its last good flags (a server of one set, which
   * has nothing else to serve); false (default) drops them and `view` rejects, so the memory goes.
   */
  keepLastGoodWhenTooLarge?: boolean;
  /** What `view` rejects with when a set is refused as too large (default the FlagSetTooLargeError itself). */
  tooLargeError?: (refusal: FlagSetTooLargeError) => Error;
  /**
   * Keep each served flag's definition as its JSON text (`HeldFlag.json`), which the set also
   * compiles from on first use: for a holder that sends the flags on (the flag-data stream) and
   * would otherwise keep a copy of its own. Default false.
   */
  keepJson?: boolean;
}

/** The size bounds of a store, defaults applied. */
interface Bounds {
  maxFlagBytes: number;
  maxSetBytes: number;
}

interface FlagSet extends FlagSetView {
  readonly set: LiveFlagSet;
  readonly projects: Map<string, string | null>;
  readonly refused: Map<string, number>;
  readonly rows: Map<string, HeldFlag>;
  /** The sum of the rows' bytes: what the set is bounded and weighed by. */
  bytes: number;
  readonly segments: Map<string, HeldSegment>;
  /** What the segments take: weighed with the flags (not bounded by maxSetBytes: the segment quotas bound them). */
  segmentBytes: number;
  syncedAt: number;
  lastFullLoadMs: number;
  /** What the last load applied, told to listeners once the set is served again. */
  applied: Applied;
}

/**
 * The one in-memory flag store: the flags of many tenant-environments, each compiled flag by flag
 * on first use (LiveFlagSet), kept current over the change feed (`flag-changed`) on the one
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
  private readonly bounds: Bounds;

  constructor(
    private readonly repository: FlagStoreReads,
    pubsub: PubSub | undefined,
    private readonly options: FlagStoreOptions,
  ) {
    const name = options.name ?? 'FlagStore';
    this.logger = new Logger(name);
    this.bounds = { maxFlagBytes: options.maxFlagBytes ?? DEFAULT_FLAG_MAX_BYTES, maxSetBytes: options.maxSetBytes ?? Infinity };
    this.cache = new SubscribedCache<string, FlagSet>(pubsub, {
      name,
      load: (id, request) => this.load(id, request),
      reconcileMs: options.reconcileMs,
      maxEntries: options.maxEntries,
      maxRetryMs: options.maxRetryMs,
      weigh: (set) => set.bytes + set.segmentBytes,
      maxWeight: options.maxBytes,
      serveStaleOn: (err) => options.keepLastGoodWhenTooLarge === true || !(err instanceof FlagSetTooLargeError),
      eager: true,
      onLoaded: (id, value, reason) => this.loaded(id, value, reason),
    }).follow(CHANNELS.flagChanged, (m, cache) => {
      const tenantId = m.tenantId.toLowerCase();
      // A segment's change re-reads that segment alone.
      const parts = m.flagKey !== undefined ? [m.flagKey] : m.segmentKey !== undefined ? [SEGMENT + m.segmentKey] : undefined;
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

  /**
   * The set, loading it or waiting for an announced change's re-read; the last good one while
   * Postgres is down. Rejects with `tooLargeError` when the set is refused as too large.
   */
  view(tenantId: string, environment: string): Promise<FlagSetView> {
    return this.cache.get(idOf(tenantId, environment)).catch((err: unknown) => {
      throw this.toldAs(err);
    });
  }

  /**
   * Keeps the set from being dropped to make room (maxEntries, maxBytes) until the returned release
   * is called, so a holder that must hear its every change (a stream) need not read it to stay
   * recent. Holders bound how many sets they hold.
   */
  hold(tenantId: string, environment: string): () => void {
    return this.cache.hold(idOf(tenantId, environment));
  }

  /** Whether held flags keep their JSON text (`keepJson`). */
  get keepsJson(): boolean {
    return this.options.keepJson === true;
  }

  /**
   * Every flag of a tenant-environment read from Postgres as this store serves them (the export):
   * bounded as the store is (a set over `maxSetBytes` rejects as `view` does, a flag over
   * `maxFlagBytes` is left out).
   */
  async served(tenantId: string, environment: string): Promise<StoredFlag[]> {
    try {
      const flags = await this.readAll(tenantId, environment);
      let bytes = 0;
      const out: StoredFlag[] = [];
      for (const f of flags) {
        const b = flagDefinitionBytes(f.definition);
        bytes += b;
        if (b <= this.bounds.maxFlagBytes) out.push(f);
      }
      if (bytes > this.bounds.maxSetBytes) throw new FlagSetTooLargeError(tenantId, environment, bytes, this.bounds.maxSetBytes, true);
      return out;
    } catch (err) {
      throw this.toldAs(err);
    }
  }

  /** The environment's segments as read now (an export: they go with `served`'s flags). */
  async servedSegments(tenantId: string, environment: string): Promise<SegmentDefinition[]> {
    return (await this.repository.findSegments(tenantId, environment)).map((s) => s.definition).sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  /** A refusal as the app wants it told (`tooLargeError`); other errors as they are. */
  private toldAs(err: unknown): unknown {
    return err instanceof FlagSetTooLargeError && this.options.tooLargeError !== undefined ? this.options.tooLargeError(err) : err;
  }

  /**
   * The writer's own replica, before it answers: `flagKey` changed (else the whole set), so the next
   * evaluation waits for the re-read rather than answer from before the write.
   */
  invalidate(tenantId: string, environment: string, flagKey?: string): void {
    this.cache.invalidate(idOf(tenantId, environment), flagKey === undefined ? undefined : [flagKey]);
  }

  /** The writer's own replica, after a segment write: the next evaluation waits for the segment's re-read. */
  invalidateSegment(tenantId: string, environment: string, segmentKey: string): void {
    this.cache.invalidate(idOf(tenantId, environment), [SEGMENT + segmentKey]);
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
        ? { loadedAt: new Date(set.set.updatedAt).toISOString(), syncedAt: new Date(set.syncedAt).toISOString(), lastFullLoadMs: set.lastFullLoadMs, bytes: set.bytes }
        : {}),
      ...(set !== undefined && set.refused.size > 0 ? { refused: Object.fromEntries(set.refused) } : {}),
      ...(cache.lastError ? { lastError: cache.lastError } : {}),
      subscriber: cache.subscribed ? cache.subscriber : 'subscribing',
    };
  }

  /** Tenant-environments held (for metrics and tests). */
  get size(): number {
    return this.cache.status().entries;
  }

  /** Bytes of the flag definitions held, all sets together (what `maxBytes` bounds). */
  get bytes(): number {
    return this.cache.status().weight;
  }

  private async load(id: string, request: LoadRequest<FlagSet>): Promise<FlagSet> {
    try {
      return await this.read(id, request);
    } catch (err) {
      if (err instanceof FlagSetTooLargeError) {
        this.logger.warn(`${err.message}${err.read ? '' : ' without reading them'}${request.previous !== undefined && this.options.keepLastGoodWhenTooLarge ? '; the last good flags are served meanwhile' : ''}`);
        throw err;
      }
      // Said as the outage it is: /readyz and the log show it.
      throw new Error(`reading flags from Postgres failed: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    }
  }

  private async read(id: string, { reason, previous, changed }: LoadRequest<FlagSet>): Promise<FlagSet> {
    const tenantId = tenantOf(id);
    const environment = id.slice(tenantId.length + 1);
    const started = performance.now();
    if (previous === undefined) {
      const flags = await this.readAll(tenantId, environment);
      const segments = await this.repository.findSegments(tenantId, environment);
      const lastFullLoadMs = Math.round(performance.now() - started);
      if (flags.length >= 1000) this.logger.log(`loaded ${flags.length} flags of ${id} in ${lastFullLoadMs} ms`);
      const set: FlagSet = {
        set: LiveFlagSet.of([]),
        projects: new Map(),
        refused: new Map(),
        rows: new Map(),
        bytes: 0,
        segments: new Map(),
        segmentBytes: 0,
        syncedAt: Date.now(),
        lastFullLoadMs,
        applied: NOTHING,
      };
      this.applySegments(set, [], segments);
      this.apply(id, set, [], flags);
      set.applied = NOTHING;
      return set;
    }
    if (reason === 'changed') {
      const keys = [...changed].filter((k) => !k.startsWith(SEGMENT));
      const segmentKeys = [...changed].filter((k) => k.startsWith(SEGMENT)).map((k) => k.slice(SEGMENT.length));
      const segments = segmentKeys.length > 0 ? this.applySegments(previous, segmentKeys, await this.repository.findSegmentsByKeys(tenantId, environment, segmentKeys)) : undefined;
      const applied = keys.length > 0 ? this.apply(id, previous, keys, await this.repository.findByKeys(tenantId, environment, keys)) : NOTHING;
      previous.applied = { ...applied, ...segments };
      return previous;
    }
    if (reason === 'whole') {
      // A change to the whole set was announced: read every flag and the segments, apply what differs.
      const flags = await this.readAll(tenantId, environment);
      const stored = await this.repository.findSegments(tenantId, environment);
      const segments = this.applySegments(previous, new Set([...previous.segments.keys(), ...stored.map((x) => x.key)]), stored);
      const applied = this.apply(id, previous, new Set([...previous.rows.keys(), ...flags.map((f) => f.key)]), flags);
      previous.applied = { ...applied, ...segments };
    } else {
      const stored = await this.repository.fingerprints(tenantId, environment);
      const stale: string[] = [];
      for (const [key, fingerprint] of stored) if (previous.rows.get(key)?.fingerprint !== fingerprint) stale.push(key);
      for (const key of previous.rows.keys()) if (!stored.has(key)) stale.push(key);
      const applied = stale.length > 0 ? this.apply(id, previous, stale, await this.repository.findByKeys(tenantId, environment, stale)) : NOTHING;
      const n = applied.flags.length + applied.removed.length;
      if (n > 0) this.logger.log(`reconcile of ${id} found ${n} flag(s) out of date, now current`);
      const storedSegments = await this.repository.segmentFingerprints(tenantId, environment);
      const staleSegments: string[] = [];
      for (const [key, fingerprint] of storedSegments) if (previous.segments.get(key)?.fingerprint !== fingerprint) staleSegments.push(key);
      for (const key of previous.segments.keys()) if (!storedSegments.has(key)) staleSegments.push(key);
      const segments =
        staleSegments.length > 0 ? this.applySegments(previous, staleSegments, await this.repository.findSegmentsByKeys(tenantId, environment, staleSegments)) : undefined;
      if (segments) this.logger.log(`reconcile of ${id} found ${staleSegments.length} segment(s) out of date, now current`);
      previous.applied = { ...applied, ...segments };
    }
    previous.syncedAt = Date.now();
    previous.lastFullLoadMs = Math.round(performance.now() - started);
    return previous;
  }

  /** Every flag of the set, unless the sizes stored with them already say it is too large: then none is read. */
  private async readAll(tenantId: string, environment: string): Promise<StoredFlag[]> {
    const limit = this.bounds.maxSetBytes;
    if (limit !== Infinity) {
      const stored = await this.repository.storedBytes(tenantId, environment);
      if (stored > limit) throw new FlagSetTooLargeError(tenantId, environment, stored, limit, false);
    }
    return this.repository.findAll(tenantId, environment);
  }

  /**
   * Puts the re-read flags of `keys` in and takes out those of `keys` that are gone, in one
   * synchronous step; returns what differed (nothing for a repeated announcement). A flag over
   * `maxFlagBytes` is taken out (or never put in) and told in `refused`; a change that would take
   * the set past `maxSetBytes` is refused whole, leaving the set as it was.
   */
  private apply(id: string, held: FlagSet, keys: Iterable<string>, found: readonly StoredFlag[]): Applied {
    const changed = found.filter((f) => held.rows.get(f.key)?.fingerprint !== f.fingerprint || !(held.set.has(f.key) || held.refused.has(f.key)));
    const foundKeys = new Set(found.map((f) => f.key));
    const removed: string[] = [];
    for (const key of keys) if (!foundKeys.has(key) && (held.set.has(key) || held.rows.has(key))) removed.push(key);
    if (changed.length === 0 && removed.length === 0) return NOTHING;
    const sized = changed.map((f) => ({ flag: f, bytes: flagDefinitionBytes(f.definition) }));
    let bytes = held.bytes;
    for (const key of removed) bytes -= held.rows.get(key)?.bytes ?? 0;
    for (const { flag, bytes: b } of sized) bytes += b - (held.rows.get(flag.key)?.bytes ?? 0);
    if (bytes > this.bounds.maxSetBytes) {
      const tenantId = tenantOf(id);
      throw new FlagSetTooLargeError(tenantId, id.slice(tenantId.length + 1), bytes, this.bounds.maxSetBytes, true);
    }
    const accepted = sized.filter((s) => s.bytes <= this.bounds.maxFlagBytes).map((s) => ({ ...s, json: this.options.keepJson ? JSON.stringify(s.flag.definition) : undefined }));
    const refused = sized.filter((s) => s.bytes > this.bounds.maxFlagBytes);
    // A flag newly refused is taken out of what evaluations and listeners see.
    const takenOut = [...removed, ...refused.map((s) => s.flag.key)].filter((key) => held.set.has(key));
    held.set.apply(
      // The text when it is kept: compiled from it on first use, the definition is not held twice.
      accepted.map((s) => (s.json === undefined ? s.flag.definition : { key: s.flag.key, text: s.json })),
      takenOut,
    );
    for (const key of removed) {
      held.rows.delete(key);
      held.projects.delete(key);
      held.refused.delete(key);
    }
    for (const { flag, bytes: b, json } of accepted) {
      held.rows.set(flag.key, { fingerprint: flag.fingerprint, bytes: b, json });
      held.projects.set(flag.key, flag.projectId);
      held.refused.delete(flag.key);
    }
    for (const { flag, bytes: b } of refused) {
      held.rows.set(flag.key, { fingerprint: flag.fingerprint, bytes: b, json: undefined });
      held.projects.set(flag.key, flag.projectId);
      held.refused.set(flag.key, b);
      this.logger.warn(`flag ${flag.key} of ${id} is not served: its definition takes ${b} bytes, over the ${this.bounds.maxFlagBytes} a flag may take`);
    }
    held.bytes = bytes;
    return { flags: accepted.map((s) => s.flag), removed: takenOut };
  }

  /**
   * Puts the re-read segments of `keys` in and takes out those of `keys` that are gone; what differed,
   * or undefined when nothing did (a repeated announcement).
   */
  private applySegments(held: FlagSet, keys: Iterable<string>, found: readonly StoredSegment[]): Pick<Applied, 'segments' | 'removedSegments'> | undefined {
    const changed = found.filter((s) => held.segments.get(s.key)?.fingerprint !== s.fingerprint);
    const foundKeys = new Set(found.map((s) => s.key));
    const removed: string[] = [];
    for (const key of keys) if (!foundKeys.has(key) && held.segments.has(key)) removed.push(key);
    if (changed.length === 0 && removed.length === 0) return undefined;
    for (const key of removed) {
      held.segmentBytes -= held.segments.get(key)!.bytes;
      held.segments.delete(key);
    }
    for (const s of changed) {
      const json = JSON.stringify(s.definition);
      const bytes = utf8Length(json);
      held.segmentBytes += bytes - (held.segments.get(s.key)?.bytes ?? 0);
      held.segments.set(s.key, { definition: s.definition, fingerprint: s.fingerprint, bytes, json: this.options.keepJson ? json : undefined });
    }
    // The evaluations' segmentMatch resolves through the set, and its updatedAt (a change's `at`) moves.
    held.set.applySegments(
      changed.map((s) => s.definition),
      removed,
    );
    return { segments: changed, removedSegments: removed };
  }

  private loaded(id: string, value: FlagSet, reason: LoadReason): void {
    const applied = value.applied;
    value.applied = NOTHING;
    const keys = reason === 'first' ? undefined : [...applied.flags.map((f) => f.key), ...applied.removed];
    const segmentsChanged = applied.segments !== undefined;
    if (keys !== undefined && keys.length === 0 && !segmentsChanged) return; // nothing differed (a repeated announcement)
    if (this.listeners.size === 0) return;
    const tenantId = tenantOf(id);
    const change: FlagSetChanged = {
      tenantId,
      environment: id.slice(tenantId.length + 1),
      keys,
      flags: keys === undefined ? [] : applied.flags,
      removed: keys === undefined ? [] : applied.removed,
      at: value.set.updatedAt,
      ...(keys !== undefined && segmentsChanged ? { segments: applied.segments, removedSegments: applied.removedSegments ?? [] } : {}),
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
  /** Segments changed or added, when any segment changed. */
  segments?: StoredSegment[];
  removedSegments?: string[];
}

const NOTHING: Applied = { flags: [], removed: [] };

/** Before a segment's key, the part of a set an announced segment change re-reads (no flag key starts with it: keys start with a letter or digit). */
const SEGMENT = '\u0000';

function idOf(tenantId: string, environment: string): string {
  return `${tenantId}/${environment}`;
}

/** Tenant ids hold no '/', environment keys may. */
function tenantOf(id: string): string {
  return id.slice(0, id.indexOf('/'));
}
