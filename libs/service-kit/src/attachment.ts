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
  if (options.idleMs !== undefined && options.idleMs > 0) res.setTimeout(options.idleMs, () => res.destroy());
  res.status(200);
  res.setHeader('Content-Type', file.contentType);
  res.setHeader('Content-Disposition', `attachment; filename="${file.filename}"`);
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  // Byte mode with the default 16 KiB mark: at most one chunk waits in the readable, the rest in the socket's buffer.
  const source = Readable.from(file.body, { objectMode: false });
  try {
    await pipeline(source, res);
  } catch (err) {
    // A client that went away is normal; anything else is ours.
    if (!res.destroyed || (err as NodeJS.ErrnoException).code !== 'ERR_STREAM_PREMATURE_CLOSE') logger.error(`download ${file.filename} failed after it started: ${String(err)}`);
    res.destroy();
  }
}
