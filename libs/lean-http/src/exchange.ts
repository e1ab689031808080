import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Transform } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import {
  acceptsMediaType,
  BodyRefusals,
  CommonProblems,
  declaresBody,
  mediaTypeOf,
  type ProblemException,
  type ProblemType,
  problemTypeForStatus,
  problemTypeUri,
} from '@flagship/problem-details';
import { assignRequestId, CLIENT_REQUEST_ID_HEADER, clientRequestIdOf } from '@flagship/service-kit';
import { setHttpRoute } from '@flagship/tracing';
import type { RequestObserver } from './buffered-metrics';

export const JSON_TYPE = 'application/json';
const PROBLEM_TYPE = 'application/problem+json';

/**
 * assignRequestId makes the id (and notes the caller's own, see clientRequestIdOf) and sets it with
 * res.setHeader. Here the header goes into the one writeHead call with the others instead: once
 * setHeader has been used, Node keeps a header map and merges into it, which costs more per request
 * than handing writeHead all headers at once (docs/decisions/2026-11-29-serving-loop-costs.md).
 */
const NO_HEADERS = { setHeader: (): undefined => undefined } as unknown as ServerResponse;

/**
 * An error of the HTTP layer itself (wrong method, body refused, unknown route, a failure) or of an
 * app's handler, in terms every error format can express. `code` is a problem slug for the layer's
 * own errors (`method-not-allowed`, `payload-too-large`, `unsupported-media-type`, `malformed-json`,
 * `not-found`, `internal-error`) and an app's own code otherwise.
 */
export interface LeanError {
  status: number;
  code: string;
  message: string;
  /** The request field at fault, where there is one (OpenAI's `param`). */
  param?: string | null;
  /** The problem type, when it is not one of CommonProblems (an app's own: `flag-not-found`). */
  type?: ProblemType;
  /** Problem members beyond the standard ones (a 422's `errors`). */
  extensions?: Record<string, unknown>;
}

/** A ProblemException in the layer's terms, for any app's error format. */
export function leanErrorOf(problem: ProblemException): LeanError {
  const type = problem.problem;
  const extensions = Object.keys(problem.extensions).length > 0 ? problem.extensions : undefined;
  return { status: type.status, code: type.slug, message: problem.detail, type, extensions };
}

/** How an app writes errors: problem+json (orep-server, management-api) or its own format (the gateway's OpenAI body). */
export type ErrorWriter = (x: Exchange, error: LeanError, headers?: OutgoingHttpHeaders) => void;

const COMMON_PROBLEMS: Readonly<Record<string, ProblemType | undefined>> = CommonProblems;

/** RFC 9457 problem+json, the platform's default: the common problem type named by `code`, else the one for the status. */
export const problemErrorWriter: ErrorWriter = (x, error, headers) => {
  x.problem(error.type ?? COMMON_PROBLEMS[error.code] ?? problemTypeForStatus(error.status), error.message, error.extensions, headers);
};

/**
 * One request answered outside Express: the request id, the answer, and its count in the app's
 * HttpMetrics, in the few steps a hot path needs and nothing more.
 */
export class Exchange {
  readonly requestId: string;
  /** The caller's own sane `x-request-id`, echoed as x-client-request-id and logged beside ours. */
  readonly clientRequestId: string | undefined;
  private readonly started = performance.now();
  /** Headers every answer from now on carries (addHeaders). */
  private added: OutgoingHttpHeaders | undefined;

  constructor(
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    /** Route template for metrics and the request's span: `/ofrep/v1/evaluate/flags/:key`, never the raw path. */
    readonly route: string,
    private readonly metrics: RequestObserver,
    private readonly errors: ErrorWriter = problemErrorWriter,
  ) {
    this.requestId = assignRequestId(req as IncomingMessage & { id?: unknown }, NO_HEADERS);
    this.clientRequestId = clientRequestIdOf(req);
    setHttpRoute(route);
  }

  /** The id headers every answer carries: ours first, then the added and the given ones, and the caller's id echoed when it sent one. */
  private withIds(headers: OutgoingHttpHeaders | undefined): OutgoingHttpHeaders {
    const all: OutgoingHttpHeaders = { 'x-request-id': this.requestId, ...this.added, ...headers };
    if (this.clientRequestId !== undefined) all[CLIENT_REQUEST_ID_HEADER] = this.clientRequestId;
    return all;
  }

  get answered(): boolean {
    return this.res.headersSent;
  }

  /** Headers for every answer from now on, errors included (a rate limit's RateLimit-* once it is counted). */
  addHeaders(headers: OutgoingHttpHeaders): void {
    this.added = this.added === undefined ? headers : { ...this.added, ...headers };
  }

  /** `body` is JSON text already (often cached). */
  json(status: number, body: string, headers?: OutgoingHttpHeaders): void {
    if (headers !== undefined || this.clientRequestId !== undefined || this.added !== undefined) return this.send(status, JSON_TYPE, headers, body);
    // The common answer, with a header object of one fixed shape: no spread, no merge.
    const res = this.res;
    if (res.headersSent) return;
    res.writeHead(status, { 'x-request-id': this.requestId, 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(body) });
    res.end(body);
    this.observe(status);
  }

  /** No body at all (OFREP's 304, 401, 403, 429). */
  empty(status: number, headers?: OutgoingHttpHeaders): void {
    this.send(status, undefined, headers, undefined);
  }

  /** An error in the app's format (its ErrorWriter). */
  error(error: LeanError, headers?: OutgoingHttpHeaders): void {
    this.errors(this, error, headers);
  }

  /** A problem in the app's format, with its own headers (Retry-After, Accept) after `headers`. */
  fail(problem: ProblemException, headers?: OutgoingHttpHeaders): void {
    const own = Object.keys(problem.headers).length > 0;
    this.errors(this, leanErrorOf(problem), own ? { ...headers, ...problem.headers } : headers);
  }

  /** Any answer whose body is known in full. */
  send(status: number, contentType: string | undefined, headers: OutgoingHttpHeaders | undefined, body: string | Buffer | undefined): void {
    const res = this.res;
    if (res.headersSent) return;
    const all = this.withIds(headers);
    if (contentType !== undefined) all['content-type'] = contentType;
    // Given here: Node would otherwise send a body written after writeHead chunked.
    if (body !== undefined) all['content-length'] = Buffer.byteLength(body);
    res.writeHead(status, all);
    res.end(body);
    this.observe(status);
  }

  /**
   * Starts an answer whose body follows in pieces (server-sent events): writes the head and counts
   * the request now; the caller writes to `res` and ends it. Undefined when already answered.
   */
  startStream(status: number, headers: OutgoingHttpHeaders): ServerResponse | undefined {
    const res = this.res;
    if (res.headersSent) return undefined;
    res.writeHead(status, this.withIds(headers));
    this.observe(status);
    return res;
  }

  /** Milliseconds since this request reached the HTTP layer. */
  elapsedMs(): number {
    return performance.now() - this.started;
  }

  /** RFC 9457, as the rest of the app writes it (instance = the request id). */
  problem(type: ProblemType, detail: string, extensions?: Record<string, unknown>, headers?: OutgoingHttpHeaders): void {
    const body = {
      type: problemTypeUri(type.slug),
      title: type.title,
      status: type.status,
      detail,
      instance: this.requestId,
      ...extensions,
    };
    this.send(type.status, PROBLEM_TYPE, headers, JSON.stringify(body));
  }

  private observe(status: number): void {
    this.metrics.observe(this.req.method ?? 'POST', this.route, status, (performance.now() - this.started) / 1000);
  }
}

export type BodyProblem = 'too-large' | 'media-type' | 'encoding' | 'unreadable';
export type BodyResult = { ok: true; text: string } | { ok: false; problem: BodyProblem };

/** The content codings a body may come in, as Express' body-parser takes them (the limit applies to the decoded bytes). */
const DECODERS: Readonly<Record<string, () => Transform>> = { gzip: createGunzip, deflate: createInflate, br: createBrotliDecompress };

const CHARSET = /;\s*charset\s*=\s*"?([^";\s]+)/i;

/** JSON (the body rules' media types), in UTF-8 when a charset is named: the layer decodes UTF-8 only. */
export function isJsonContentType(contentType: string | undefined): boolean {
  if (contentType === JSON_TYPE) return true; // what nearly every client sends: nothing to parse
  if (contentType === undefined || !acceptsMediaType(mediaTypeOf(contentType))) return false;
  const charset = CHARSET.exec(contentType)?.[1]?.toLowerCase();
  return charset === undefined || charset === 'utf-8' || charset === 'utf8';
}

/**
 * Reads the whole body as UTF-8 text, at most `limit` bytes; '' when there is none. The media type
 * is checked before reading. An oversized body is refused by its Content-Length before a byte is
 * read, or as soon as the bytes read pass the limit; the rest is drained, not parsed. A body in a
 * content coding (gzip, deflate, br) is decoded, the limit applying to the decoded bytes, as Express
 * does; any other coding is refused ('encoding').
 */
export function readJsonBody(req: IncomingMessage, limit: number, done: (result: BodyResult) => void): void {
  if (!declaresBody(req.headers)) {
    req.resume();
    done({ ok: true, text: '' });
    return;
  }
  if (!isJsonContentType(req.headers['content-type'])) {
    req.resume();
    done({ ok: false, problem: 'media-type' });
    return;
  }
  const coding = req.headers['content-encoding']?.trim().toLowerCase();
  if (coding !== undefined && coding !== '' && coding !== 'identity') {
    const decoder = DECODERS[coding];
    if (decoder === undefined) {
      req.resume();
      done({ ok: false, problem: 'encoding' });
      return;
    }
    readDecoded(req, decoder(), limit, done);
    return;
  }
  const declared = Number(req.headers['content-length']);
  if (declared > limit) {
    req.resume();
    done({ ok: false, problem: 'too-large' });
    return;
  }
  let first: Buffer | undefined;
  let more: Buffer[] | undefined;
  let size = 0;
  let over = false;
  req.on('data', (chunk: Buffer) => {
    if (over) return;
    size += chunk.length;
    if (size > limit) {
      over = true;
      first = more = undefined;
      done({ ok: false, problem: 'too-large' });
      return;
    }
    if (first === undefined) first = chunk;
    else (more ??= [first]).push(chunk);
  });
  req.on('end', () => {
    if (over) return;
    const text = more ? Buffer.concat(more).toString('utf8') : first ? first.toString('utf8') : '';
    done({ ok: true, text });
  });
  // No 'error' listener: a client that goes away mid-body gets no answer (there is nobody to send it
  // to), and Node emits a request's 'error' only to listeners, so none is needed to stay up.
}

/**
 * A compressed body, decoded as it arrives: at most `limit` decoded bytes are kept (a small body that
 * inflates past it is refused as soon as it does, and the rest is drained); undecodable bytes are
 * 'unreadable'.
 */
function readDecoded(req: IncomingMessage, decoder: Transform, limit: number, done: (result: BodyResult) => void): void {
  const chunks: Buffer[] = [];
  let size = 0;
  let finished = false;
  const finish = (result: BodyResult): void => {
    if (finished) return;
    finished = true;
    if (!result.ok) {
      req.unpipe(decoder);
      decoder.destroy();
      req.resume();
    }
    done(result);
  };
  decoder.on('data', (chunk: Buffer) => {
    if (finished) return;
    size += chunk.length;
    if (size > limit) return finish({ ok: false, problem: 'too-large' });
    chunks.push(chunk);
  });
  decoder.on('end', () => finish({ ok: true, text: Buffer.concat(chunks).toString('utf8') }));
  decoder.on('error', () => finish({ ok: false, problem: 'unreadable' }));
  req.pipe(decoder);
}

/** The HTTP layer's refusals of a body (the body rules of libs/problem-details), in the app's error format. */
export function refuseBody(x: Exchange, problem: BodyProblem, limit: number): void {
  if (problem === 'too-large') x.fail(BodyRefusals.tooLarge(limit));
  else if (problem === 'encoding') x.fail(BodyRefusals.encoding(String(x.req.headers['content-encoding'])));
  else if (problem === 'unreadable') x.fail(BodyRefusals.unreadable());
  else x.fail(BodyRefusals.mediaType(mediaTypeOf(x.req.headers['content-type']), [JSON_TYPE], ' (UTF-8)'));
}

/** Whether an If-None-Match header names this ETag (weak comparison, as RFC 9110 asks for it). */
export function etagMatches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false;
  const strip = (t: string): string => (t.startsWith('W/') ? t.slice(2) : t);
  const wanted = strip(etag);
  for (const candidate of ifNoneMatch.split(',')) {
    const t = candidate.trim();
    if (t === '*' || strip(t) === wanted) return true;
  }
  return false;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
