import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsInt, IsOptional, IsString, Max, MaxLength, Min } from 'class-validator';
import { Type } from 'class-transformer';
import type { Request, Response } from 'express';
import { isUuid } from '@flagship/domain';
import { ProblemException, CommonProblems } from '@flagship/problem-details';

/** `?limit=&cursor=` of every list (CONTRACT.md section 4). */
export class PageQueryDto {
  @ApiPropertyOptional({ minimum: 1, maximum: 1000, default: 100 })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(1000)
  limit?: number;

  @ApiPropertyOptional({ description: 'opaque cursor from the previous page\'s Link rel="next"' })
  @IsOptional()
  @IsString()
  @MaxLength(512)
  cursor?: string;
}

/** Keyset position: the sort value and id of the last row of the previous page. */
export interface PageCursor {
  at: string;
  id: string;
}

export interface Page<T> {
  items: T[];
  next?: PageCursor;
}

export function encodeCursor(c: PageCursor): string {
  return Buffer.from(JSON.stringify([c.at, c.id])).toString('base64url');
}

/** Exactly what `Date.toISOString` writes for years 1 to 9999, the only `at` this API issues. */
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

function isIssuedInstant(at: string): boolean {
  if (!ISO_INSTANT.test(at) || at.startsWith('0000')) return false;
  const t = Date.parse(at);
  // Round-trips: 2026-02-30 parses (to March 2nd) but is no instant we wrote.
  return !Number.isNaN(t) && new Date(t).toISOString() === at;
}

/**
 * The position a `?cursor=` names. Every part is checked (a timestamp as written by toISOString, an
 * id of the list's kind, UUID unless said otherwise), so a forged or tampered cursor is a 400 here
 * and never reaches a query as a cast error.
 */
export function decodeCursor(raw: string | undefined, isId: (id: string) => boolean = isUuid): PageCursor | undefined {
  if (raw === undefined) return undefined;
  try {
    const v: unknown = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8'));
    if (Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && typeof v[1] === 'string' && isIssuedInstant(v[0]) && isId(v[1])) {
      return { at: v[0], id: v[1] };
    }
  } catch {
    /* fall through */
  }
  throw new ProblemException(CommonProblems['bad-request'], 'The cursor is not one this API issued.');
}

export const pageLimit = (q: PageQueryDto): number => q.limit ?? 100;

/**
 * Fetch one more row than asked to know whether a next page exists; returns the page and sets
 * `Link: <...>; rel="next"` when it does, so lists stay plain JSON arrays.
 */
export function sendPage<T>(req: Request, res: Response, rows: T[], limit: number, cursorOf: (row: T) => PageCursor): T[] {
  if (rows.length <= limit) return rows;
  const items = rows.slice(0, limit);
  const url = new URL(req.originalUrl, 'http://x');
  url.searchParams.set('limit', String(limit));
  url.searchParams.set('cursor', encodeCursor(cursorOf(items[items.length - 1])));
  res.setHeader('Link', `<${url.pathname}${url.search}>; rel="next"`);
  return items;
}
