import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

const VALID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * New request ids, shaped like UUIDs (every log line and problem `instance` looks alike): a random
 * prefix drawn once per process, then a 48-bit counter. Unique across processes by the prefix's
 * 74 random bits and within one by the counter. A request id names a request in logs; it is not a
 * secret, so it need not be unpredictable, and drawing a random UUID per request cost orep-server's
 * evaluation path about 2 µs of the ~50 µs it spends per request.
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

/**
 * The request id: the caller's `x-request-id` when it is a sane token, else a new one. Set on the
 * request (`req.id`, read by pino-http and the problem filter) and echoed on the response.
 */
export function assignRequestId(req: IncomingMessage & { id?: unknown }, res: ServerResponse): string {
  if (typeof req.id === 'string') return req.id;
  const sent = req.headers['x-request-id'];
  const id = typeof sent === 'string' && VALID.test(sent) ? sent : ids.create();
  req.id = id;
  res.setHeader('x-request-id', id);
  return id;
}
