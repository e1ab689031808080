import { createHash } from 'node:crypto';
import type Redis from 'ioredis';

/** Thrown when Redis is not connected or does not answer in time; callers decide what an outage means. */
export class RedisUnavailableError extends Error {
  constructor(reason: string) {
    super(`redis unavailable: ${reason}`);
  }
}

/** Rejects with RedisUnavailableError when the client is not ready or `work` outlasts `timeoutMs`. */
export async function withRedis<T>(redis: Redis, timeoutMs: number, work: () => Promise<T>): Promise<T> {
  // The shared client has no offline queue; checking first avoids building a command that can only fail.
  if (redis.status !== 'ready') throw new RedisUnavailableError(`connection is ${redis.status}`);
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      work(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new RedisUnavailableError(`no answer within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
  } catch (err) {
    if (err instanceof RedisUnavailableError) throw err;
    // A reply error (WRONGTYPE, a script bug) is ours to see, not an outage to paper over.
    if (err instanceof Error && err.name === 'ReplyError') throw err;
    throw new RedisUnavailableError(err instanceof Error ? err.message : String(err));
  } finally {
    clearTimeout(timer);
  }
}

/** One run of a script: what runScripts sends. */
export interface ScriptCall {
  script: LuaScript;
  keys: string[];
  args: Array<string | number>;
}

/**
 * Runs of any scripts in one pipeline: one round trip however many there are, so callers that each
 * have a script to run for the same requests (a limiter and a counter) share it. A run that fails
 * gives its error in its place; one that found its script missing (NOSCRIPT) is run again with EVAL.
 * Rejects only when the pipeline itself fails (Redis unreachable, a time-out).
 */
export async function runScripts(redis: Redis, calls: ReadonlyArray<ScriptCall>): Promise<unknown[]> {
  if (calls.length === 0) return [];
  const replies = await redis.pipeline(calls.map((c) => ['evalsha', c.script.sha, c.keys.length, ...c.keys, ...c.args])).exec();
  if (replies === null) throw new Error('the pipeline was aborted');
  return Promise.all(
    replies.map(([err, value], i) => {
      if (err === null) return value;
      const c = calls[i]!;
      if (err.message.startsWith('NOSCRIPT')) return redis.eval(c.script.source, c.keys.length, ...c.keys, ...c.args).catch((e: unknown) => e);
      return err;
    }),
  );
}

/**
 * A Lua script run by its SHA (EVALSHA), loaded on first use or after a Redis restart (NOSCRIPT);
 * several runs, of it and others, in one pipeline with runScripts. Kept off the shared client's `defineCommand`, so a script adds nothing to the connection every caller shares.
 */
export class LuaScript {
  readonly sha: string;

  constructor(readonly source: string) {
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  async run(redis: Redis, keys: string[], args: Array<string | number>): Promise<unknown> {
    try {
      return await redis.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
      return redis.eval(this.source, keys.length, ...keys, ...args);
    }
  }
}
