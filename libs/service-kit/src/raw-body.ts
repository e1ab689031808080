import type { NextFunction, Request, Response } from 'express';
import { CommonProblems, ProblemException } from '@flagship/problem-details';

/**
 * Keeps a route's request body as the exact bytes received (a Buffer in `req.body`), for handlers
 * that verify a signature over them (Stripe webhooks). Marks the body read so the JSON and form
 * parsers registered after it leave the route alone; every other route is unaffected.
 */
export function rawBodyMiddleware(limitBytes: number) {
  return (req: Request, _res: Response, next: NextFunction): void => {
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    req.on('data', (chunk: Buffer) => {
      if (failed) return;
      size += chunk.length;
      if (size > limitBytes) {
        failed = true;
        req.resume();
        next(new ProblemException(CommonProblems['payload-too-large'], `The request body exceeds the limit of ${limitBytes} bytes.`));
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (failed) return;
      (req as Request & { _body?: boolean }).body = Buffer.concat(chunks);
      (req as Request & { _body?: boolean })._body = true;
      next();
    });
    req.on('error', (err) => {
      if (!failed) next(err);
      failed = true;
    });
  };
}
