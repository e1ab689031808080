import { ApiError, type ApiErrorInit, AuthenticationError, ConnectionError, FlagNotFoundError, FlagshipError, problemSlug, RateLimitError, toProblem } from './sdk.errors';
import type { Problem, RequestOptions } from './sdk.types';
import { isRetryableStatus, parseNonNegativeInteger, retryDelay, type RetrySettings, serverRetryHint } from './retry-policy';

/** Where the bearer token of each request comes from. */
export interface Credentials {
  token(): Promise<string>;
  /** After a 401 invalid_token for `used`: a different token worth one more try, or undefined. */
  renew(used: string): Promise<string | undefined>;
}

/** What a retry is about to do, for logs and metrics. */
export interface RetryEvent {
  method: string;
  /** Path and query. */
  path: string;
  /** 1 for the first retry. */
  retry: number;
  /** How long the SDK waits before sending again. */
  delayMs: number;
  /** The status that caused it (429, 503, 409), or undefined after a network error or timeout. */
  status: number | undefined;
  /** The network error or timeout that caused it. */
  error: Error | undefined;
}

export interface TransportSettings {
  /** Without a trailing slash. */
  baseUrl: string;
  userAgent: string;
  maxRetries: number;
  retry: RetrySettings;
  timeoutMs: number;
  tenantId: string | undefined;
  environment: string | undefined;
  onRetry: ((event: RetryEvent) => void) | undefined;
}

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface ApiRequest {
  method: HttpMethod;
  /** Relative to baseUrl, e.g. `/api/flags`; or an absolute URL of the same origin (pagination links). */
  path: string;
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  ifMatch?: string;
  /** A POST that changes nothing (evaluate): no Idempotency-Key needed, and always safe to repeat. */
  readOnly?: boolean;
  /** The flag a call is about, for FlagNotFoundError. */
  flagKey?: string;
  options?: RequestOptions;
}

export interface ApiResponse<T> {
  status: number;
  headers: Headers;
  body: T;
  /** The URL answered, against which relative links resolve. */
  url: string;
}

interface Exchange {
  method: string;
  url: string;
  /** Path and query, for error messages. */
  path: string;
  headers: Record<string, string>;
  body: string | undefined;
  /** Safe to send again after a network error (the server may have acted on the first one). */
  repeatable: boolean;
  maxRetries: number;
  signal: AbortSignal | undefined;
}

interface Answer {
  response: Response;
  body: unknown;
  attempts: number;
}

class TimeoutError extends Error {
  override name = 'TimeoutError';
}

/** A POST/PATCH carries an Idempotency-Key, which makes resending it safe; GET and DELETE are safe anyway. */
const REPEATABLE = new Set(['GET', 'HEAD', 'DELETE', 'PUT', 'OPTIONS']);

/**
 * Sends requests to the management API: headers, JSON, timeouts, retries with backoff, one token
 * renewal on a 401 invalid_token, and answers turned into typed errors.
 */
export class HttpTransport {
  private readonly credentials: Credentials;
  private readonly origin: string;

  constructor(
    private readonly settings: TransportSettings,
    credentials: (transport: HttpTransport) => Credentials,
  ) {
    this.origin = new URL(settings.baseUrl).origin;
    this.credentials = credentials(this);
  }

  async request<T>(req: ApiRequest): Promise<ApiResponse<T>> {
    const options = req.options ?? {};
    const url = this.urlOf(req);
    const headers: Record<string, string> = { accept: 'application/json, application/problem+json', 'user-agent': this.settings.userAgent };
    const tenantId = options.tenantId ?? this.settings.tenantId;
    const environment = options.environment ?? this.settings.environment;
    if (tenantId !== undefined) headers['x-tenant-id'] = tenantId;
    if (environment !== undefined) headers['x-environment'] = environment;
    if (req.ifMatch !== undefined) headers['if-match'] = req.ifMatch;
    let body: string | undefined;
    if (req.body !== undefined) {
      body = JSON.stringify(req.body);
      headers['content-type'] = 'application/json';
    }
    // One key for the call, reused by every retry: the server then applies the change at most once.
    if ((req.method === 'POST' || req.method === 'PATCH') && !req.readOnly) {
      headers['idempotency-key'] = options.idempotencyKey ?? globalThis.crypto.randomUUID();
    }
    const exchange: Exchange = {
      method: req.method,
      url: url.toString(),
      path: url.pathname + url.search,
      headers,
      body,
      repeatable: REPEATABLE.has(req.method) || req.readOnly === true || headers['idempotency-key'] !== undefined,
      maxRetries: options.maxRetries ?? this.settings.maxRetries,
      signal: options.signal,
    };

    // The token may first have to be fetched (client credentials), which can take as long as the
    // token endpoint's timeout and retries: the caller's abort must end the wait for it too.
    let token = await unlessAborted(() => this.credentials.token(), exchange.signal);
    let answer = await this.exchange({ ...exchange, headers: { ...headers, authorization: `Bearer ${token}` } });
    let attempts = answer.attempts;
    if (answer.response.status === 401 && isInvalidToken(answer)) {
      // Once: the token may have expired or been revoked since it was issued; a second refusal is final.
      const renewed = await unlessAborted(() => this.credentials.renew(token), exchange.signal);
      if (renewed !== undefined) {
        token = renewed;
        answer = await this.exchange({ ...exchange, headers: { ...headers, authorization: `Bearer ${token}` } });
        attempts += answer.attempts;
      }
    }
    const { response } = answer;
    if (response.status >= 200 && response.status < 300) {
      return { status: response.status, headers: response.headers, body: answer.body as T, url: response.url || exchange.url };
    }
    throw this.errorFor('api', response, answer.body, { method: req.method, path: exchange.path, attempts }, req.flagKey);
  }

  /**
   * Opens a Server-Sent Events stream (`GET path`): the response once its headers say 200
   * `text/event-stream`, its body unread. One attempt, no retries (the stream's owner reconnects
   * with its own backoff); a 401 invalid_token renews the token and tries once more, so every
   * reconnect carries a current token. A refusal is thrown as the ApiError `request` would throw.
   */
  openEventStream(path: string, opts: { lastEventId?: string; query?: Record<string, string | undefined>; signal: AbortSignal }): Promise<Response> {
    const headers: Record<string, string> = { 'cache-control': 'no-cache' };
    if (opts.lastEventId !== undefined) headers['last-event-id'] = opts.lastEventId;
    return this.openBody(path, { accept: 'text/event-stream', what: 'an event stream', headers, query: opts.query, options: { signal: opts.signal } });
  }

  /**
   * Opens a download (`GET path`, e.g. the usage export): the response once its headers say 200
   * with a content type of `accept`, its body unread, so the caller reads it as a stream. As
   * openEventStream: one attempt (a download half read cannot be resumed by a retry), one token
   * renewal; the timeout covers the headers only.
   */
  openDownload(path: string, accept: string[], query: Record<string, string | undefined>, options: RequestOptions = {}): Promise<Response> {
    return this.openBody(path, { accept: accept.join(', '), what: accept.join(' or '), headers: {}, query, options });
  }

  private async openBody(
    path: string,
    opts: { accept: string; what: string; headers: Record<string, string>; query?: Record<string, string | undefined>; options: RequestOptions },
  ): Promise<Response> {
    const { signal } = opts.options;
    const url = this.urlOf({ method: 'GET', path, query: opts.query });
    const headers: Record<string, string> = { accept: `${opts.accept}, application/problem+json`, 'user-agent': this.settings.userAgent, ...opts.headers };
    const tenantId = opts.options.tenantId ?? this.settings.tenantId;
    const environment = opts.options.environment ?? this.settings.environment;
    if (tenantId !== undefined) headers['x-tenant-id'] = tenantId;
    if (environment !== undefined) headers['x-environment'] = environment;
    const send = async (token: string): Promise<Response> => {
      const controller = new AbortController();
      const onAbort = () => controller.abort(signal?.reason);
      if (signal?.aborted) onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      // The timeout covers the headers only: the body is the stream, open for as long as it lasts.
      const timer = setTimeout(() => controller.abort(new TimeoutError(`no answer within ${this.settings.timeoutMs} ms`)), this.settings.timeoutMs);
      try {
        return await fetch(url, { method: 'GET', headers: { ...headers, authorization: `Bearer ${token}` }, signal: controller.signal, redirect: 'manual' });
      } catch (err) {
        if (signal?.aborted) throw signal.reason;
        throw new ConnectionError('GET', url.pathname, 1, err);
      } finally {
        clearTimeout(timer);
      }
    };
    const token = await unlessAborted(() => this.credentials.token(), signal);
    let response = await send(token);
    let body = response.status === 200 ? undefined : parseBody(response, await response.text());
    if (response.status === 401 && isInvalidToken({ response, body, attempts: 1 })) {
      const renewed = await unlessAborted(() => this.credentials.renew(token), signal);
      if (renewed !== undefined) {
        response = await send(renewed);
        body = response.status === 200 ? undefined : parseBody(response, await response.text());
      }
    }
    const contentType = (response.headers.get('content-type') ?? '').split(';')[0].trim().toLowerCase();
    if (response.status === 200 && opts.accept.split(',').some((a) => a.trim().toLowerCase() === contentType)) return response;
    if (response.status === 200) {
      await response.body?.cancel();
      throw new FlagshipError(`GET ${url.pathname} answered ${response.headers.get('content-type') ?? 'no content type'}, not ${opts.what}.`);
    }
    throw this.errorFor('api', response, body, { method: 'GET', path: url.pathname, attempts: 1 });
  }

  /**
   * POSTs an OAuth token request (RFC 6749 section 4.4) and returns the parsed JSON answer. Any
   * refusal is an AuthenticationError (429 a RateLimitError, 5xx an ApiError) carrying the
   * endpoint's `error`; never the credentials.
   */
  async tokenRequest(tokenUrl: string, form: string, basicCredentials: string): Promise<unknown> {
    const url = new URL(tokenUrl);
    const answer = await this.exchange({
      method: 'POST',
      url: url.toString(),
      path: url.pathname,
      headers: {
        accept: 'application/json',
        'content-type': 'application/x-www-form-urlencoded',
        'user-agent': this.settings.userAgent,
        authorization: `Basic ${basicCredentials}`,
      },
      body: form,
      // Asking for a token twice only costs a second token.
      repeatable: true,
      maxRetries: this.settings.maxRetries,
      signal: undefined,
    });
    const { response } = answer;
    if (response.status === 200) return answer.body;
    throw this.errorFor('token', response, answer.body, { method: 'POST', path: url.pathname, attempts: answer.attempts });
  }

  /** Sends until an answer that is final: success, an error not worth retrying, or the retries spent. */
  private async exchange(ex: Exchange): Promise<Answer> {
    let retries = 0;
    for (let attempts = 1; ; attempts++) {
      let response: Response;
      let text: string;
      try {
        ({ response, text } = await this.sendOnce(ex));
      } catch (err) {
        if (ex.signal?.aborted) throw ex.signal.reason;
        if (!ex.repeatable || retries >= ex.maxRetries) throw new ConnectionError(ex.method, ex.path, attempts, err);
        const delay = retryDelay(retries, undefined, this.settings.retry) ?? 0;
        retries++;
        this.notify(ex, retries, delay, undefined, err);
        await sleep(delay, ex.signal);
        continue;
      }
      const body = parseBody(response, text);
      if (retries < ex.maxRetries && isRetryableStatus(response.status, problemTypeOf(body))) {
        const hint = serverRetryHint(response.status, response.headers, Date.now());
        const delay = retryDelay(retries, hint, this.settings.retry);
        // undefined: the server asked for a longer wait than one may be; surface the error now.
        if (delay !== undefined) {
          retries++;
          this.notify(ex, retries, delay, response.status, undefined);
          await sleep(delay, ex.signal);
          continue;
        }
      }
      return { response, body, attempts };
    }
  }

  private notify(ex: Exchange, retry: number, delayMs: number, status: number | undefined, error: unknown): void {
    if (!this.settings.onRetry) return;
    const event: RetryEvent = { method: ex.method, path: ex.path, retry, delayMs, status, error: error === undefined ? undefined : error instanceof Error ? error : new Error(String(error)) };
    try {
      this.settings.onRetry(event);
    } catch {
      // An observer's bug must not turn a call that would succeed into a failure.
    }
  }

  private async sendOnce(ex: Exchange): Promise<{ response: Response; text: string }> {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new TimeoutError(`no answer within ${this.settings.timeoutMs} ms`)), this.settings.timeoutMs);
    const onAbort = () => controller.abort(ex.signal?.reason);
    if (ex.signal?.aborted) onAbort();
    ex.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      // 'manual': a redirect is reported rather than followed, since following would turn a POST into a GET.
      const response = await fetch(ex.url, { method: ex.method, headers: ex.headers, body: ex.body, signal: controller.signal, redirect: 'manual' });
      // Read within the same timeout: a server that sends headers and then stalls is no better.
      const text = await response.text();
      return { response, text };
    } finally {
      clearTimeout(timer);
      ex.signal?.removeEventListener('abort', onAbort);
    }
  }

  private urlOf(req: ApiRequest): URL {
    const url = /^https?:\/\//i.test(req.path) ? new URL(req.path) : new URL(this.settings.baseUrl + req.path);
    // Pagination links come from the server; a token must never follow one to another host.
    if (url.origin !== this.origin) throw new FlagshipError(`Refusing to send credentials to ${url.origin}: the client is configured for ${this.origin}.`);
    for (const [name, value] of Object.entries(req.query ?? {})) {
      if (value !== undefined) url.searchParams.set(name, String(value));
    }
    return url;
  }

  private errorFor(kind: 'api' | 'token', response: Response, body: unknown, call: Pick<ApiErrorInit, 'method' | 'path' | 'attempts'>, flagKey?: string): ApiError {
    const status = response.status;
    const requestId = response.headers.get('x-request-id') ?? undefined;
    let problem: Problem = toProblem(status, body, requestId);
    if (status >= 300 && status < 400) {
      const location = response.headers.get('location');
      problem = { ...problem, detail: `The server redirected${location ? ` to ${location}` : ''}; set baseUrl to the address that answers.` };
    }
    const init: ApiErrorInit = { status, problem, requestId, ...call };
    if (status === 429) {
      return new RateLimitError(init, {
        retryAfterMs: serverRetryHint(status, response.headers, Date.now()),
        limit: parseNonNegativeInteger(response.headers.get('ratelimit-limit')),
        remaining: parseNonNegativeInteger(response.headers.get('ratelimit-remaining')),
      });
    }
    if (kind === 'token' && status >= 400 && status < 500) {
      const oauthError = typeof body === 'object' && body !== null && typeof (body as { error?: unknown }).error === 'string' ? (body as { error: string }).error : undefined;
      return new AuthenticationError({ ...init, problem: { ...problem, title: 'The token endpoint refused the client credentials' } }, oauthError);
    }
    if (status === 401) return new AuthenticationError(init);
    if (status === 404 && problemSlug(problem.type) === 'flag-not-found') return new FlagNotFoundError(init, flagKey);
    return new ApiError(init);
  }
}

/** The API's own 401 for a bad or expired token: the RFC 6750 challenge, or its problem type. */
function isInvalidToken(answer: Answer): boolean {
  const challenge = answer.response.headers.get('www-authenticate') ?? '';
  if (/error="?invalid_token"?/i.test(challenge)) return true;
  const type = problemTypeOf(answer.body);
  return type !== undefined && problemSlug(type) === 'invalid-token';
}

function problemTypeOf(body: unknown): string | undefined {
  const type = typeof body === 'object' && body !== null ? (body as { type?: unknown }).type : undefined;
  return typeof type === 'string' ? type : undefined;
}

function parseBody(response: Response, text: string): unknown {
  if (text === '') return undefined;
  if (/[/+]json\b/i.test(response.headers.get('content-type') ?? '')) {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return text;
    }
  }
  return text;
}

/**
 * `work()`, unless the caller's signal fires first: then its reason. The token fetch is shared by
 * concurrent calls, so one caller's abort only stops that caller waiting; the fetch goes on for the others.
 */
function unlessAborted<T>(work: () => Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return work();
  // Already aborted: not even a token request is sent.
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work()
      .then(resolve, reject)
      .finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** Waits `ms`, or rejects with the signal's reason when it fires first. */
export function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
