import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Logger } from '@nestjs/common';
import type { Response } from 'express';

/** A file made while it is sent: its text comes chunk by chunk from `body`. */
export interface StreamedAttachment {
  contentType: string;
  /** Plain ASCII without quotes (the caller builds it); sent as `attachment; filename="..."`. */
  filename: string;
  body: AsyncIterable<string>;
}

const logger = new Logger('Attachment');

/**
 * Sends `file` as a download with backpressure: the next chunk is asked of `body` only once the
 * socket has taken the previous ones, so a slow client slows the reads instead of filling memory, and
 * a client that leaves ends them (the iterator is returned). A failure after the headers cannot become
 * a problem+json: the connection is destroyed, so the client sees a broken download, never a file
 * that looks complete but is not.
 */
export async function sendAttachment(res: Response, file: StreamedAttachment, options: { idleMs?: number } = {}): Promise<void> {
  // A client that stops reading stalls the pipeline forever; with idleMs its socket is closed once
  // nothing moved for that long, which ends the pipeline (and the reads) as a client leaving does.
  const idleMs = options.idleMs ?? 0;
  let body = file.body;
  if (idleMs > 0) {
    res.setTimeout(idleMs, () => res.destroy());
    body = clockedWhileSending(file.body, (on) => res.socket?.setTimeout(on ? idleMs : 0));
  }
  res.status(200);
  res.setHeader('Content-Type', file.contentType);
  res.setHeader('Content-Disposition', `attachment; filename="${file.filename}"`);
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  // Byte mode with the default 16 KiB mark: at most one chunk waits in the readable, the rest in the socket's buffer.
  const source = Readable.from(body, { objectMode: false });
  try {
    await pipeline(source, res);
  } catch (err) {
    // A client that went away is normal; anything else is ours.
    if (!res.destroyed || (err as NodeJS.ErrnoException).code !== 'ERR_STREAM_PREMATURE_CLOSE') logger.error(`download ${file.filename} failed after it started: ${String(err)}`);
    res.destroy();
  }
}

/**
 * `body` with the idle clock stopped while the next chunk is being made: a socket is idle too while
 * the server waits on its own source (a database page, bounded by its own timeouts), and that is no
 * sign of a client that stopped reading, so a reading client is never cut for the server's slowness.
 */
async function* clockedWhileSending(body: AsyncIterable<string>, clock: (on: boolean) => void): AsyncGenerator<string> {
  clock(false);
  for await (const chunk of body) {
    clock(true);
    yield chunk;
    clock(false);
  }
  // The last chunks still go out after the body ends.
  clock(true);
}
