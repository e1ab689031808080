import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

const VALID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * The request id: the caller's `x-request-id` when it is a sane token, else a new UUID. Set on the
 * request (`req.id`, read by pino-http and the problem filter) and echoed on the response.
 */
export function assignRequestId(req: IncomingMessage & { id?: unknown }, res: ServerResponse): string {
  if (typeof req.id === 'string') return req.id;
  const sent = req.headers['x-request-id'];
  const id = typeof sent === 'string' && VALID.test(sent) ? sent : randomUUID();
  req.id = id;
  res.setHeader('x-request-id', id);
  return id;
}
