import {
  ErrorCode,
  type EvaluationContext,
  type JsonValue,
  OpenFeatureEventEmitter,
  type Provider,
  ProviderEvents,
  type ResolutionDetails,
  StandardResolutionReasons,
} from '@openfeature/server-sdk';
import {
  checkEvaluationContext,
  contextFromOpenFeature,
  evaluationError,
  type FlagDefinition,
  LiveFlagSet,
  openFeatureMetadata,
  openFeatureReason,
  type SegmentDefinition,
} from '@flagship/flag-evaluation';
import { readServerSentEvents, type ServerSentEvent } from './event-stream';
import { type FlagshipClientOptions, transportFor } from './flagship.client';
import { type HttpTransport, sleep } from './http-transport';
import { ApiError, AuthenticationError, RateLimitError } from './sdk.errors';

export interface InProcessProviderOptions extends FlagshipClientOptions {
  /** How long `initialize` waits for the flags before it fails (the provider's status is then ERROR; it keeps trying). Default 10 000 ms. */
  initTimeoutMs?: number;
  /** A stream that sends nothing, not even a heartbeat, for this long is taken as broken. Default 45 000 ms (three of the API's heartbeats). */
  inactivityTimeoutMs?: number;
  /** The first wait before reconnecting after a failure; it doubles up to `maxReconnectDelayMs` (default 1000 and 30 000 ms), with jitter. */
  reconnectDelayMs?: number;
  maxReconnectDelayMs?: number;
}

type Status = 'not-ready' | 'ready' | 'stale' | 'error';
type ValueType = 'boolean' | 'string' | 'number' | 'object';

const STREAM_PATH = '/api/flag-stream';
/** A stream that ends sooner than this after it opened counts as a failure (backoff), not as a routine end. */
const SHORT_STREAM_MS = 1000;

/**
 * An OpenFeature server provider that evaluates in process: it downloads the environment's flag
 * definitions over the flag-data stream (GET /api/flag-stream: a put, then patches and deletes),
 * keeps them current, and evaluates locally with the API's own evaluator (`@flagship/flag-evaluation`),
 * answering as orep-server's OFREP routes do. Segments travel with the flags (segmentMatch resolves
 * locally), and OpenFeature's flat context is read as LaunchDarkly's OpenFeature providers read it
 * (contextFromOpenFeature: `kind` selects the kind, `kind: "multi"` nests one object per kind). When the stream breaks it keeps answering from the
 * last good flags, emits STALE, and reconnects with backoff and a current token, resuming from the
 * last event id; READY again once back. Changes emit CONFIGURATION_CHANGED with the changed keys.
 */
export class FlagshipInProcessProvider implements Provider {
  readonly metadata = { name: 'flagship-in-process' } as const;
  readonly runsOn = 'server' as const;
  readonly events = new OpenFeatureEventEmitter();

  private readonly http: HttpTransport;
  private readonly settings: { initTimeoutMs: number; inactivityTimeoutMs: number; reconnectDelayMs: number; maxReconnectDelayMs: number };
  private liveSet: LiveFlagSet | undefined;
  /** key -> the definition's JSON text, to tell which flags a new put changed. */
  private texts = new Map<string, string>();
  /** segment key -> its JSON text, to tell whether a new put changed any segment. */
  private segmentTexts = new Map<string, string>();
  private lastEventId: string | undefined;
  private state: Status = 'not-ready';
  private readonly stopped = new AbortController();
  private running: Promise<void> | undefined;
  private first: { promise: Promise<void>; resolve: () => void; reject: (err: Error) => void };

  constructor(options: InProcessProviderOptions) {
    this.http = transportFor(options, 'FlagshipInProcessProvider');
    this.settings = {
      initTimeoutMs: options.initTimeoutMs ?? 10_000,
      inactivityTimeoutMs: options.inactivityTimeoutMs ?? 45_000,
      reconnectDelayMs: options.reconnectDelayMs ?? 1000,
      maxReconnectDelayMs: options.maxReconnectDelayMs ?? 30_000,
    };
    let resolve!: () => void;
    let reject!: (err: Error) => void;
    const promise = new Promise<void>((res, rej) => ((resolve = res), (reject = rej)));
    promise.catch(() => undefined);
    this.first = { promise, resolve, reject };
  }

  /** Resolves once the flags are here; rejects after `initTimeoutMs` or on a refusal (401, 403, 404), while it keeps trying. */
  async initialize(): Promise<void> {
    this.running ??= this.run();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no flag data within ${this.settings.initTimeoutMs} ms; still trying`)), this.settings.initTimeoutMs);
    });
    try {
      await Promise.race([this.first.promise, timeout]);
    } catch (err) {
      if (this.state === 'not-ready') this.state = 'error';
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  async onClose(): Promise<void> {
    this.stopped.abort(new Error('the provider was closed'));
    await this.running;
  }

  resolveBooleanEvaluation(flagKey: string, defaultValue: boolean, context: EvaluationContext): Promise<ResolutionDetails<boolean>> {
    return Promise.resolve(this.resolve(flagKey, defaultValue, context, 'boolean'));
  }

  resolveStringEvaluation(flagKey: string, defaultValue: string, context: EvaluationContext): Promise<ResolutionDetails<string>> {
    return Promise.resolve(this.resolve(flagKey, defaultValue, context, 'string'));
  }

  resolveNumberEvaluation(flagKey: string, defaultValue: number, context: EvaluationContext): Promise<ResolutionDetails<number>> {
    return Promise.resolve(this.resolve(flagKey, defaultValue, context, 'number'));
  }

  resolveObjectEvaluation<T extends JsonValue>(flagKey: string, defaultValue: T, context: EvaluationContext): Promise<ResolutionDetails<T>> {
    return Promise.resolve(this.resolve(flagKey, defaultValue, context, 'object'));
  }

  /** The evaluation, synchronous (the evaluator is), mapped as orep-server's OFREP answers map it. */
  resolve<T>(flagKey: string, defaultValue: T, context: EvaluationContext, type: ValueType): ResolutionDetails<T> {
    const set = this.liveSet;
    if (set === undefined) return failed(defaultValue, ErrorCode.PROVIDER_NOT_READY, 'the flags have not been received yet');
    const flag = set.get(flagKey);
    if (flag === undefined) return failed(defaultValue, ErrorCode.FLAG_NOT_FOUND, `no flag '${flagKey}' in this environment`);
    const ctx = contextFromOpenFeature(context);
    const problem = checkEvaluationContext(ctx);
    // A context without a key keeps OpenFeature's own code for it; any other malformed context is INVALID_CONTEXT, as OFREP answers.
    if (problem !== undefined && problem.path !== 'key') return failed(defaultValue, ErrorCode.INVALID_CONTEXT, `context${problem.path === '' ? '' : `.${problem.path}`} ${problem.message}`);
    const result = set.evaluate(flag, ctx);
    if (result.reason === 'ERROR') {
      const error = evaluationError(flag, result);
      return failed(defaultValue, error.code === 'TARGETING_KEY_MISSING' ? ErrorCode.TARGETING_KEY_MISSING : ErrorCode.GENERAL, error.details);
    }
    const value = result.value;
    if (type === 'object' ? typeof value !== 'object' || value === null : typeof value !== type) {
      return failed(defaultValue, ErrorCode.TYPE_MISMATCH, `flag '${flagKey}' holds a ${value === null ? 'null' : typeof value}, not a ${type}`);
    }
    return { value: value as T, reason: openFeatureReason(result), variant: result.variationId, flagMetadata: openFeatureMetadata(flag, result) ?? {} };
  }

  /** Connects, reads, reconnects: until closed. */
  private async run(): Promise<void> {
    let failures = 0;
    while (!this.stopped.signal.aborted) {
      const openedAt = Date.now();
      let failed: unknown;
      try {
        await this.readStream();
      } catch (err) {
        failed = err;
      }
      if (this.stopped.signal.aborted) return;
      if (failed === undefined && Date.now() - openedAt >= SHORT_STREAM_MS) {
        failures = 0; // a routine end (the server's stream age): reconnect at once, resuming
        continue;
      }
      failures++;
      this.broken(failed ?? new Error('the flag-data stream ended'));
      await sleep(this.delayAfter(failed, failures), this.stopped.signal).catch(() => undefined);
    }
  }

  private async readStream(): Promise<void> {
    const connection = new AbortController();
    const stop = () => connection.abort(this.stopped.signal.reason);
    this.stopped.signal.addEventListener('abort', stop, { once: true });
    let timer: NodeJS.Timeout | undefined;
    const quiet = () => {
      clearTimeout(timer);
      timer = setTimeout(() => connection.abort(new Error(`the flag-data stream sent nothing for ${this.settings.inactivityTimeoutMs} ms`)), this.settings.inactivityTimeoutMs);
    };
    try {
      quiet();
      const response = await this.http.openEventStream(STREAM_PATH, { lastEventId: this.lastEventId, signal: connection.signal });
      if (response.body === null) throw new Error('the flag-data stream has no body');
      quiet();
      try {
        for await (const event of readServerSentEvents(response.body)) {
          quiet();
          this.receive(event);
        }
      } catch (err) {
        // An abort surfaces as the body's error: report why the connection was aborted instead.
        throw connection.signal.aborted ? connection.signal.reason : err;
      }
    } finally {
      clearTimeout(timer);
      this.stopped.signal.removeEventListener('abort', stop);
      connection.abort();
    }
  }

  private receive(event: ServerSentEvent): void {
    if (event.kind === 'event') {
      const changed = this.apply(event.event, event.data);
      if (changed === undefined) return; // an event this SDK does not know: ignored, as SSE clients do
      if (event.id !== undefined) this.lastEventId = event.id;
      if (changed.length > 0 && this.state !== 'not-ready') this.events.emit(ProviderEvents.ConfigurationChanged, { flagsChanged: changed });
    }
    // Anything received with flags held (an event, or the comment after a resumed stream's replay) means current again.
    if (this.liveSet === undefined) return;
    if (this.state === 'not-ready') {
      this.state = 'ready';
      this.first.resolve(); // initialize resolves; the SDK emits READY itself
    } else if (this.state !== 'ready') {
      this.state = 'ready';
      this.events.emit(ProviderEvents.Ready, { message: 'the flag-data stream is back' });
    }
  }

  /** Applies a put, patch or delete; the keys it changed, or undefined for an unknown event. */
  private apply(name: string, data: string): string[] | undefined {
    if (name === 'put') {
      const { flags, segments = [] } = JSON.parse(data) as { flags: FlagDefinition[]; segments?: SegmentDefinition[] };
      const texts = new Map(flags.map((f) => [f.key, JSON.stringify(f)]));
      const segmentTexts = new Map(segments.map((s) => [s.key, JSON.stringify(s)]));
      const changed = [...texts].filter(([key, text]) => this.texts.get(key) !== text).map(([key]) => key);
      for (const key of this.texts.keys()) if (!texts.has(key)) changed.push(key);
      const segmentsChanged = segmentTexts.size !== this.segmentTexts.size || [...segmentTexts].some(([key, text]) => this.segmentTexts.get(key) !== text);
      // A put is a snapshot: a new set swapped in at once, no evaluation sees half of it.
      const set = LiveFlagSet.of(flags);
      set.applySegments(segments, []);
      this.liveSet = set;
      this.texts = texts;
      this.segmentTexts = segmentTexts;
      return segmentsChanged ? withSegmentUsers(changed, texts) : changed;
    }
    if (this.liveSet === undefined) return undefined; // a patch before any put: the server always sends a put first
    if (name === 'patch') {
      const { flags, segments = [] } = JSON.parse(data) as { flags: FlagDefinition[]; segments?: SegmentDefinition[] };
      // Segments first, in the same synchronous step: a flag patched with a segment it names never evaluates without it.
      if (segments.length > 0) this.liveSet.applySegments(segments, []);
      this.liveSet.apply(flags, []);
      for (const s of segments) this.segmentTexts.set(s.key, JSON.stringify(s));
      for (const f of flags) this.texts.set(f.key, JSON.stringify(f));
      const changed = flags.map((f) => f.key);
      return segments.length > 0 ? withSegmentUsers(changed, this.texts) : changed;
    }
    if (name === 'delete') {
      const { keys, segmentKeys = [] } = JSON.parse(data) as { keys: string[]; segmentKeys?: string[] };
      this.liveSet.apply([], keys);
      if (segmentKeys.length > 0) this.liveSet.applySegments([], segmentKeys);
      for (const key of keys) this.texts.delete(key);
      for (const key of segmentKeys) this.segmentTexts.delete(key);
      return segmentKeys.length > 0 ? withSegmentUsers(keys, this.texts) : keys;
    }
    return undefined;
  }

  /** The stream broke: STALE when flags are held (they keep answering), ERROR when a refusal says retrying will not help soon. */
  private broken(err: unknown): void {
    const refused = isRefusal(err);
    const message = err instanceof Error ? err.message : String(err);
    if (this.state === 'not-ready') {
      if (refused) {
        this.state = 'error';
        this.first.reject(err as Error);
      }
      return;
    }
    if (refused && this.state !== 'error') {
      this.state = 'error';
      this.events.emit(ProviderEvents.Error, { message });
    } else if (this.state === 'ready') {
      this.state = 'stale';
      this.events.emit(ProviderEvents.Stale, { message });
    }
  }

  /** A 429's Retry-After; the longest wait after a refusal (it will not change soon); else exponential backoff with jitter. */
  private delayAfter(err: unknown, failures: number): number {
    const hinted = err instanceof RateLimitError ? err.retryAfterMs : undefined;
    if (hinted !== undefined) return Math.min(hinted, this.settings.maxReconnectDelayMs * 4);
    if (isRefusal(err)) return this.settings.maxReconnectDelayMs;
    const ceiling = Math.min(this.settings.maxReconnectDelayMs, this.settings.reconnectDelayMs * 2 ** Math.min(failures - 1, 20));
    return ceiling / 2 + Math.random() * (ceiling / 2);
  }
}

/** Credentials refused (revoked, a wrong secret, the token endpoint saying no), a scope missing, an unknown environment: not a passing outage. */
function isRefusal(err: unknown): boolean {
  return err instanceof AuthenticationError || (err instanceof ApiError && (err.status === 401 || err.status === 403 || err.status === 404));
}

/**
 * A segment's change changes the answers of the flags that match segments: told as changed with
 * `changed`. Which segments a flag reaches (nesting included) is not worked out here; a flag that
 * names none cannot change, one that does may.
 */
function withSegmentUsers(changed: string[], texts: ReadonlyMap<string, string>): string[] {
  const out = new Set(changed);
  for (const [key, text] of texts) if (text.includes('"segmentMatch"')) out.add(key);
  return [...out];
}

function failed<T>(value: T, errorCode: ErrorCode, errorMessage: string): ResolutionDetails<T> {
  return { value, reason: StandardResolutionReasons.ERROR, errorCode, errorMessage };
}
