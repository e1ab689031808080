import { Pool, type Dispatcher } from 'undici';
import { CircuitBreaker } from './circuit-breaker';
import { withOutputLimit } from './output-limit';
import type { ProviderLayerOptions } from './provider.env';
import {
  type JsonResult,
  type ProviderClient,
  ProviderError,
  type ProviderKey,
  type StreamResult,
  type StreamSink,
  type UpstreamRequest,
  type Usage,
} from './provider.types';
import { SseRelay } from './sse-relay';
import { estimateTokens, jsonUsage, requestText } from './usage';

/** Why a request's own controller was aborted. */
const CLIENT_GONE = Symbol('client gone');
const TIMED_OUT = Symbol('total time-out');
/** The client left after the request was sent, and the rest of the answer took too long or too many bytes (abandonedRead*). */
const GIVEN_UP = Symbol('given up');
/** The gateway is shutting down and its grace is ending (UpstreamRequest.cutter). */
const CUT = Symbol('cut for shutdown');
type AbortReason = typeof CLIENT_GONE | typeof TIMED_OUT | typeof GIVEN_UP | typeof CUT;

const PATHS = { 'chat.completions': '/chat/completions', embeddings: '/embeddings' } as const;

/** Connection failures where nothing reached the upstream (or nothing came back): retried, then 503. */
const UNREACHABLE = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);
/** The connection broke before an answer: retried (a kept-alive socket the upstream had just closed, say), then 502. */
const CONNECTION_BROKEN = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET']);
const TIMEOUTS = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

interface Upstream {
  key: ProviderKey;
  /** Undefined when the provider is not configured: every call to it is 503. */
  pool: Pool | undefined;
  pathPrefix: string;
  apiKeySecret: string;
  breaker: CircuitBreaker;
  models: string[];
}

/** What undici's `abort()` is given (it wants an Error); failureOf reads the reason from the Call. */
class CallAborted extends Error {
  constructor(reason: AbortReason) {
    super(reason === CLIENT_GONE ? 'the client went away' : "the request's time is spent");
  }
}

/**
 * One request's deadline and abort, shared by its attempts, retries and fallback. Not an
 * AbortController: a non-streamed call (the usual one) is stopped through what is under way at the
 * time (undici's own `abort` of the request, or a retry's wait), so no AbortSignal, listener or
 * event is made for it; a stream, read through undici's `request()`, gets a signal on first use.
 * The client leaving stops the call only until the request is sent: after that the provider works
 * on it and the tenant pays for it, so its answer is read to the end (its usage) all the same.
 */
class Call {
  reason: AbortReason | undefined;
  /** The client left; no retry or fallback follows. */
  clientGone = false;
  /** The current attempt has gone upstream: only the deadline (or GIVEN_UP) stops it now. */
  sent = false;
  private stopCurrent: ((err: Error) => void) | undefined;
  private controller: AbortController | undefined;

  constructor(
    readonly deadline: number,
    readonly request: UpstreamRequest,
  ) {}

  get aborted(): boolean {
    return this.reason !== undefined;
  }

  /** Marks the current attempt sent, unless the call was stopped already. */
  markSent(): void {
    if (this.reason === undefined) this.sent = true;
  }

  abort(reason: AbortReason): void {
    if (this.reason !== undefined) return;
    if (reason === CLIENT_GONE) {
      this.clientGone = true;
      if (this.sent) return;
    }
    this.reason = reason;
    this.controller?.abort(reason);
    const stop = this.stopCurrent;
    this.stopCurrent = undefined;
    stop?.(new CallAborted(reason));
  }

  /** What abort() stops from now on (undefined: nothing); stopped at once when the call is already aborted. */
  running(stop: ((err: Error) => void) | undefined): void {
    if (stop !== undefined && this.reason !== undefined) stop(new CallAborted(this.reason));
    else this.stopCurrent = stop;
  }

  /** For APIs that take an AbortSignal (streams); aborted already when the call is. */
  get signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController();
      if (this.reason !== undefined) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }
}

/** What an attempt resolves with: a whole answer (json) or undici's streamed one (stream). */
type Answer = WholeAnswer | Dispatcher.ResponseData;

const isResponseData = (a: Answer): a is Dispatcher.ResponseData => !Buffer.isBuffer(a.body);

/** A whole answer read through undici's dispatch(): status and body, with no stream in between. */
interface WholeAnswer {
  statusCode: number;
  body: Buffer;
}

/** The answer broke after its status arrived: the provider may have run the request, so it is never retried. */
class BodyBroken extends Error {
  constructor(override readonly cause: unknown) {
    super('the answer broke off');
  }
}

/** A failed attempt: the error to report, and whether another attempt may follow. */
class AttemptFailure extends Error {
  constructor(
    readonly error: ProviderError,
    readonly retryable: boolean,
    /** Counts against the provider's circuit (the client leaving does not). */
    readonly providerFault: boolean,
  ) {
    super(error.message);
  }
}

const errorCode = (err: unknown): string | undefined => {
  const e = err as { code?: unknown; cause?: { code?: unknown } } | null;
  const code = e?.code ?? e?.cause?.code;
  return typeof code === 'string' ? code : undefined;
};

/** The body each upstream is sent (withOutputLimit), serialised once per upstream tried. */
function bodies(endpoint: UpstreamRequest['endpoint'], body: Record<string, unknown>): (key: ProviderKey) => Buffer {
  const made: Partial<Record<ProviderKey, Buffer>> = {};
  return (key) => (made[key] ??= Buffer.from(JSON.stringify(withOutputLimit(key, endpoint, body))));
}

/** The SSE error event written when a stream fails after output started (never followed by [DONE]). */
function errorEvent(code: 'provider_error' | 'provider_timeout' | 'service_unavailable', message: string): Buffer {
  return Buffer.from(`data: ${JSON.stringify({ error: { message, type: 'server_error', code, param: null } })}\n\n`);
}

/**
 * The provider layer: any OpenAI-compatible endpoint, one undici Pool of kept-alive connections per
 * provider. A request tries its allowed providers in order; each gets up to `maxRetries` retries on
 * connection failures and upstream 502/503 (jittered backoff, never past the request's total
 * time-out, never once a byte went to the client); a provider whose circuit is open is skipped.
 * Upstream 4xx answers are relayed as they are; other failures become ProviderError 502/503/504.
 */
export class OpenAiCompatibleProviders implements ProviderClient {
  private readonly upstreams: Record<ProviderKey, Upstream>;
  private readonly retryBaseMs: number;
  private modelsTimer: NodeJS.Timeout | undefined;

  constructor(private readonly options: ProviderLayerOptions) {
    this.retryBaseMs = options.retryBaseMs ?? 50;
    const make = (key: ProviderKey): Upstream => {
      const { url, apiKeySecret } = options.upstreams[key];
      const base = url ? new URL(url) : undefined;
      return {
        key,
        pool: base
          ? new Pool(base.origin, {
              connections: options.maxConnections,
              pipelining: 1,
              keepAliveTimeout: 30_000,
              connect: { timeout: options.connectTimeoutMs },
              headersTimeout: options.firstByteTimeoutMs,
              bodyTimeout: options.firstByteTimeoutMs,
            })
          : undefined,
        pathPrefix: base ? base.pathname.replace(/\/+$/, '') : '',
        apiKeySecret,
        breaker: new CircuitBreaker(options.breakerFailures, options.breakerCooldownMs),
        models: [],
      };
    };
    this.upstreams = { inhouse: make('inhouse'), hosted: make('hosted') };
  }

  /** Reads every configured upstream's model list now and then every `modelsRefreshMs` (default 60 s). */
  async start(): Promise<void> {
    await this.refreshModels();
    this.modelsTimer = setInterval(() => void this.refreshModels(), this.options.modelsRefreshMs ?? 60_000);
    this.modelsTimer.unref();
  }

  /** The circuit state of each provider, for readiness and metrics. */
  circuits(): Record<ProviderKey, string> {
    return { inhouse: this.upstreams.inhouse.breaker.state, hosted: this.upstreams.hosted.breaker.state };
  }

  configured(): ReadonlyArray<{ provider: ProviderKey; models: readonly string[] }> {
    return Object.values(this.upstreams)
      .filter((u) => u.pool)
      .map((u) => ({ provider: u.key, models: u.models }));
  }

  async json(request: UpstreamRequest): Promise<JsonResult> {
    const body = bodies(request.endpoint, request.body);
    return this.withCall(request, async (call) => {
      const { upstream, response, sentAt } = await this.open(request, call, (u) => this.whole(u, request, call, body(u.key)));
      const ok = response.statusCode < 300;
      return {
        provider: upstream.key,
        status: response.statusCode,
        body: response.body,
        usage: ok ? jsonUsage(request.endpoint, request.body, response.body) : { inputTokens: 0, outputTokens: 0, estimated: false },
        upstreamMs: performance.now() - sentAt,
      };
    });
  }

  async stream(request: UpstreamRequest, sink: StreamSink): Promise<StreamResult> {
    const given = request.body.stream_options;
    const givenOptions = typeof given === 'object' && given !== null && !Array.isArray(given) ? (given as Record<string, unknown>) : {};
    // Always ask for usage, so a stream is billed by the upstream's own count.
    const body = bodies(request.endpoint, { ...request.body, stream: true, stream_options: { ...givenOptions, include_usage: true } });
    const relay = new SseRelay(givenOptions.include_usage === true);
    const inputText = requestText(request.endpoint, request.body);
    return this.withCall(request, async (call) => {
      const { upstream, response, sentAt } = await this.open(request, call, (u) => this.streamed(u, request, call, body(u.key)));
      if (response.statusCode !== 200) {
        const answer = await this.readAll(upstream, response, call);
        return {
          provider: upstream.key,
          usage: { inputTokens: 0, outputTokens: 0, estimated: false },
          outcome: 'rejected',
          rejection: { status: response.statusCode, body: answer },
          upstreamMs: performance.now() - sentAt,
        };
      }
      sink.start(upstream.key);
      let outcome: StreamResult['outcome'];
      // Bytes read since the client left: past abandonedReadBytes the rest is not waited for.
      let unread = this.options.abandonedReadBytes ?? 8 * 1024 * 1024;
      try {
        for await (const bytes of response.body) {
          const out = relay.push(bytes as Buffer);
          if (out && !call.clientGone) sink.chunk(out);
          else if (call.clientGone && (unread -= (bytes as Buffer).length) < 0) call.abort(GIVEN_UP);
        }
        if (call.clientGone) outcome = 'client_gone';
        else if (relay.sawError) outcome = 'upstream_broken';
        else if (relay.sawDone) outcome = 'completed';
        else if (relay.sawFinish) {
          // An upstream that ends cleanly after finish_reason without [DONE]: the answer is whole.
          sink.chunk(Buffer.from('data: [DONE]\n\n'));
          outcome = 'completed';
        } else {
          sink.chunk(errorEvent('provider_error', 'The provider ended the stream before it was complete.'));
          outcome = 'upstream_broken';
        }
      } catch (err) {
        const reason = call.reason;
        // The client left (before or while the rest was read): billed by the usage read, else estimated.
        if (call.clientGone) outcome = 'client_gone';
        else {
          const timedOut = reason === TIMED_OUT || TIMEOUTS.has(errorCode(err) ?? '');
          sink.chunk(
            reason === CUT
              ? errorEvent('service_unavailable', 'The gateway is restarting; the stream was cut. Try again.')
              : timedOut
                ? errorEvent('provider_timeout', 'The provider took too long; the stream was cut.')
                : errorEvent('provider_error', 'The provider broke off the stream.'),
          );
          outcome = 'upstream_broken';
        }
      }
      if (outcome === 'upstream_broken' && call.reason !== CUT) upstream.breaker.onFailure();
      return { provider: upstream.key, usage: relay.finalUsage(inputText), outcome, upstreamMs: performance.now() - sentAt };
    });
  }

  async close(): Promise<void> {
    if (this.modelsTimer) clearInterval(this.modelsTimer);
    await Promise.all(Object.values(this.upstreams).map((u) => u.pool?.close()));
  }

  // ---- the request's life ----------------------------------------------------------------------

  /** Sets up the request's deadline and ties it to the client's signal; always cleans up. */
  private async withCall<T>(request: UpstreamRequest, body: (call: Call) => Promise<T>): Promise<T> {
    const call = new Call(performance.now() + this.options.totalTimeoutMs, request);
    let givingUp: NodeJS.Timeout | undefined;
    const onClientGone = (): void => {
      call.abort(CLIENT_GONE);
      // Sent: its answer is read for its usage, but no longer than abandonedReadMs more.
      if (!call.aborted) givingUp = setTimeout(() => call.abort(GIVEN_UP), this.options.abandonedReadMs ?? 60_000);
    };
    if (request.signal.aborted) onClientGone();
    else request.signal.addEventListener('abort', onClientGone, { once: true });
    const cutter = request.cutter;
    if (cutter?.cut) call.abort(CUT);
    else if (cutter) cutter.stop = () => call.abort(CUT);
    const timer = setTimeout(() => call.abort(TIMED_OUT), this.options.totalTimeoutMs);
    try {
      return await body(call);
    } finally {
      clearTimeout(timer);
      clearTimeout(givingUp);
      request.signal.removeEventListener('abort', onClientGone);
      if (cutter) cutter.stop = undefined;
    }
  }

  /**
   * Gets an answer's status and headers from the first allowed provider that gives one (a 2xx or a
   * 4xx), retrying and falling back as allowed; throws the last provider's ProviderError otherwise.
   */
  private async open<R extends Answer>(
    request: UpstreamRequest,
    call: Call,
    send: (upstream: Upstream) => Promise<R>,
  ): Promise<{ upstream: Upstream; response: R; sentAt: number }> {
    let last: ProviderError | undefined;
    for (const key of request.providers) {
      const upstream = this.upstreams[key];
      if (!upstream.pool) {
        last = new ProviderError('provider_unavailable', 503, `The ${key} provider is not configured.`, key);
        continue;
      }
      try {
        return await this.attempts(upstream, call, send);
      } catch (err) {
        if (!(err instanceof ProviderError)) throw err;
        last = err;
        // The client left or the whole request's time is spent: no other provider can help.
        if (call.aborted || call.clientGone) break;
      }
    }
    throw last ?? new ProviderError('provider_unavailable', 503, 'No provider was allowed for this request.', request.providers[0] ?? 'inhouse');
  }

  /** One provider: an attempt, then retries while they are allowed, the circuit lets them and time remains. */
  private async attempts<R extends Answer>(
    upstream: Upstream,
    call: Call,
    send: (upstream: Upstream) => Promise<R>,
  ): Promise<{ upstream: Upstream; response: R; sentAt: number }> {
    let last: ProviderError | undefined;
    for (let attempt = 0; ; attempt++) {
      if (!upstream.breaker.tryPass()) {
        // A retry stopped by a circuit its own failures just opened reports what failed, not the circuit.
        throw last ?? new ProviderError('provider_unavailable', 503, `The ${upstream.key} provider is failing; its circuit is open.`, upstream.key);
      }
      const sentAt = performance.now();
      call.sent = false;
      try {
        const response = await this.attempt(upstream, call, send);
        upstream.breaker.onSuccess();
        return { upstream, response, sentAt };
      } catch (err) {
        if (!(err instanceof AttemptFailure)) throw err;
        // That attempt is over: until the next is sent, the client leaving stops the call again.
        call.sent = false;
        if (err.providerFault) upstream.breaker.onFailure();
        else upstream.breaker.release();
        last = err.error;
        if (!err.retryable || attempt >= this.options.maxRetries || call.clientGone) throw err.error;
        // Jittered, doubling: 0.5 to 1.5 times 50, 100, ... ms; never past the deadline.
        const wait = this.retryBaseMs * 2 ** attempt * (0.5 + Math.random());
        if (performance.now() + wait >= call.deadline) throw err.error;
        await this.sleep(wait, call);
        if (call.aborted) throw this.abortError(upstream.key, call);
      }
    }
  }

  /** Sends once; resolves with a 2xx or 4xx answer, throws AttemptFailure otherwise. */
  private async attempt<R extends Answer>(upstream: Upstream, call: Call, send: (upstream: Upstream) => Promise<R>): Promise<R> {
    let response: R;
    try {
      response = await send(upstream);
    } catch (err) {
      if (err instanceof BodyBroken) {
        // The status came and the provider may have run the request: its fault, never retried.
        const failure = this.failureOf(upstream.key, err.cause, call);
        throw new AttemptFailure(failure.error, false, failure.providerFault);
      }
      throw this.failureOf(upstream.key, err, call);
    }
    const status = response.statusCode;
    if (status < 500) return response;
    // A streamed answer is drained so the connection goes back to the pool (a whole one was read).
    if (isResponseData(response)) await response.body.dump().catch(() => undefined);
    const retryable = status === 502 || status === 503;
    if (status === 503) throw new AttemptFailure(new ProviderError('provider_unavailable', 503, `The ${upstream.key} provider is unavailable (503).`, upstream.key), true, true);
    if (status === 504) throw new AttemptFailure(new ProviderError('provider_timeout', 504, `The ${upstream.key} provider timed out (504).`, upstream.key), false, true);
    throw new AttemptFailure(new ProviderError('provider_error', 502, `The ${upstream.key} provider failed (${status}).`, upstream.key), retryable, true);
  }

  private headers(upstream: Upstream, request: UpstreamRequest): Record<string, string> {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: request.stream ? 'text/event-stream' : 'application/json',
      'x-request-id': request.requestId,
    };
    // Read per request, so a rotated key (Secrets Manager) is used at once.
    const key = this.options.secrets.get(upstream.apiKeySecret);
    if (key) headers.authorization = `Bearer ${key}`;
    return headers;
  }

  /**
   * A non-streamed answer, whole, through undici's dispatch(): the handler gathers the chunks, so no
   * Readable, AbortSignal or listener is made per request (most of `request()`'s cost here). First-byte
   * and idle time-outs are the pool's; the call's deadline and the client's departure abort through
   * the handler's `abort`. Rejects with the cause before the status, with BodyBroken after it
   * (but for a 5xx, whose body is never used).
   */
  private whole(upstream: Upstream, request: UpstreamRequest, call: Call, body: Buffer): Promise<WholeAnswer> {
    return new Promise<WholeAnswer>((resolve, reject) => {
      let statusCode = 0;
      const chunks: Buffer[] = [];
      upstream.pool!.dispatch(
        { method: 'POST', path: upstream.pathPrefix + PATHS[request.endpoint], headers: this.headers(upstream, request), body },
        {
          onConnect: (abort: (err?: Error) => void) => {
            call.markSent();
            call.running(abort);
          },
          onHeaders: (status: number) => {
            statusCode = status;
            return true;
          },
          onData: (chunk: Buffer) => {
            chunks.push(chunk);
            return true;
          },
          onComplete: () => {
            call.running(undefined);
            resolve({ statusCode, body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks) });
          },
          onError: (err: Error) => {
            call.running(undefined);
            // A 5xx is judged by its status alone (retried or not), as before its body is read.
            if (statusCode >= 500 && !call.aborted) resolve({ statusCode, body: Buffer.alloc(0) });
            else reject(statusCode === 0 ? err : new BodyBroken(err));
          },
        },
      );
    });
  }

  /** A streamed answer: status and headers now, the body (unread) as undici's Readable. */
  private async streamed(upstream: Upstream, request: UpstreamRequest, call: Call, body: Buffer): Promise<Dispatcher.ResponseData> {
    // First-byte and idle time-outs are the pool's (the same for every request, so undici refreshes one
    // timer rather than making one per request); the request's deadline aborts through the signal.
    // Handed to undici is sent (queued for a connection, it would not be yet; the pool rarely queues).
    call.markSent();
    return upstream.pool!.request({ method: 'POST', path: upstream.pathPrefix + PATHS[request.endpoint], headers: this.headers(upstream, request), body, signal: call.signal });
  }

  /** The rest of a streamed answer that is not relayed (an upstream 4xx); failures while reading it are the provider's (not retried: it may have run). */
  private async readAll(upstream: Upstream, response: Dispatcher.ResponseData, call: Call): Promise<Buffer> {
    try {
      return Buffer.from(await response.body.arrayBuffer());
    } catch (err) {
      const failure = this.failureOf(upstream.key, err, call);
      if (failure.providerFault) upstream.breaker.onFailure();
      throw failure.error;
    }
  }

  private failureOf(key: ProviderKey, err: unknown, call: Call): AttemptFailure {
    if (call.aborted) return new AttemptFailure(this.abortError(key, call), false, call.reason === TIMED_OUT);
    const code = errorCode(err) ?? '';
    if (TIMEOUTS.has(code) && call.sent) {
      // The provider had the request and may still be working on it: paid for, as an estimate.
      return new AttemptFailure(new ProviderError('provider_timeout', 504, `The ${key} provider did not answer in time.`, key, this.lostAnswer(call)), false, true);
    }
    if (UNREACHABLE.has(code)) return new AttemptFailure(new ProviderError('provider_unavailable', 503, `The ${key} provider is unreachable.`, key), true, true);
    if (CONNECTION_BROKEN.has(code)) {
      return new AttemptFailure(new ProviderError('provider_error', 502, `The connection to the ${key} provider broke.`, key), true, true);
    }
    if (TIMEOUTS.has(code)) return new AttemptFailure(new ProviderError('provider_timeout', 504, `The ${key} provider did not answer in time.`, key), false, true);
    this.options.onError?.(`unexpected error calling the ${key} provider`, err);
    return new AttemptFailure(new ProviderError('provider_error', 502, `The call to the ${key} provider failed.`, key), false, true);
  }

  private abortError(key: ProviderKey, call: Call): ProviderError {
    if (call.reason === CLIENT_GONE) return new ProviderError('provider_error', 502, 'The client went away before the request was sent.', key);
    // Timed out, cut or given up on after the client left: when sent, paid for as an estimate.
    const usage = call.sent ? this.lostAnswer(call) : undefined;
    if (call.reason === CUT) return new ProviderError('provider_unavailable', 503, 'The gateway is restarting; try again.', key, usage);
    return new ProviderError('provider_timeout', 504, `The ${key} provider did not answer within the request's time.`, key, usage);
  }

  /** What a request that reached the provider costs when its answer (and its usage) is lost: the input, estimated. */
  private lostAnswer(call: Call): Usage {
    return { inputTokens: estimateTokens(requestText(call.request.endpoint, call.request.body)), outputTokens: 0, estimated: true };
  }

  private sleep(ms: number, call: Call): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        call.running(undefined);
        resolve();
      }, ms);
      call.running(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  private async refreshModels(): Promise<void> {
    await Promise.all(
      Object.values(this.upstreams).map(async (u) => {
        if (!u.pool) return;
        try {
          const key = this.options.secrets.get(u.apiKeySecret);
          const res = await u.pool.request({
            method: 'GET',
            path: `${u.pathPrefix}/models`,
            headers: key ? { authorization: `Bearer ${key}` } : {},
            headersTimeout: this.options.firstByteTimeoutMs,
            // At start-up too: a silent upstream must not hold the app back for long.
            signal: AbortSignal.timeout(Math.min(this.options.totalTimeoutMs, 5_000)),
          });
          const text = await res.body.text();
          if (res.statusCode !== 200) throw new Error(`GET /models answered ${res.statusCode}`);
          const parsed = JSON.parse(text) as { data?: Array<{ id?: unknown }> };
          u.models = (parsed.data ?? []).map((m) => m.id).filter((id): id is string => typeof id === 'string');
        } catch (err) {
          this.options.onError?.(`could not list the ${u.key} provider's models`, err);
        }
      }),
    );
  }
}
