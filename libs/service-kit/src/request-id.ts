import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

const VALID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * New request ids, shaped like UUIDs (every log line and problem `instance` looks alike): a random
 * prefix drawn once per process, then a 48-bit counter. Unique across processes by the prefix's
 * 74 random bits and within one by the counter. A request id names a request in logs; it is not a
 * secret, so it need not be unpredictable, and drawing a random UUID per request was a visible share
 * of orep-server's evaluation path (docs/decisions/2026-11-29-serving-loop-costs.md).
 */
export class RequestIds {
  private readonly prefix = randomUUID().slice(0, 24);
  private next = 0;

  create(): string {
    this.next = (this.next + 1) % 0x1000000000000;
    return this.prefix + this.next.toString(16).padStart(12, '0');
  }
}

const ids = new RequestIds();

/** A new request id (see RequestIds). */
export function newRequestId(): string {
  return ids.create();
}

/** The response header echoing the caller's own `x-request-id` (CLIENT_REQUEST_ID_HEADER). */
export const CLIENT_REQUEST_ID_HEADER = 'x-client-request-id';

/**
 * The caller's `x-request-id` when it is a sane token (1-128 of A-Z a-z 0-9 . _ : -), else
 * undefined. Kept beside the server's id, never instead of it: a caller choosing the id could make
 * its requests look like another's in the logs, or one id name many requests.
 */
export function clientRequestIdOf(req: IncomingMessage): string | undefined {
  const sent = req.headers['x-request-id'];
  return typeof sent === 'string' && VALID.test(sent) ? sent : undefined;
}

/**
 * The request id, always made here (the problem `instance`, the `x-request-id` answered, every log
 * line). The caller's own `x-request-id`, when sane, is logged as `clientRequestId` and echoed as
 * `x-client-request-id`. Set on the request (`req.id`, read by pino-http and the problem filter).
 */
export function assignRequestId(req: IncomingMessage & { id?: unknown }, res: ServerResponse): string {
  if (typeof req.id === 'string') return req.id;
  const id = ids.create();
  req.id = id;
  res.setHeader('x-request-id', id);
  const sent = clientRequestIdOf(req);
  if (sent !== undefined) res.setHeader(CLIENT_REQUEST_ID_HEADER, sent);
  return id;
}
