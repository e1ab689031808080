import type Redis from 'ioredis';
import { RedisKeys, RedisUnavailableError } from '@flagship/redis';
import { IdempotencyService } from './idempotency.service';
import { resolveRequestPoliciesOptions } from './request-policies.options';

/**
 * One Redis connection as Redis runs it: commands answered strictly in the order they were sent,
 * held while the test says the server is paused (as CLIENT PAUSE WRITE holds them). Only what the
 * claim path sends: SET NX, GET, and EVALSHA of the release-or-renew script (the one script this
 * scenario runs), whose rule is "delete the claim only while it is in flight under this token".
 */
class OneConnection {
  readonly status = 'ready';
  readonly stored = new Map<string, string>();
  paused = true;
  private readonly queue: Array<{ name: string; answer: () => void }> = [];

  get waiting(): string[] {
    return this.queue.map((c) => c.name);
  }

  set(key: string, value: string): Promise<'OK' | null> {
    return this.send('SET', () => {
      if (this.stored.has(key)) return null;
      this.stored.set(key, value);
      return 'OK';
    });
  }

  get(key: string): Promise<string | null> {
    return this.send('GET', () => this.stored.get(key) ?? null);
  }

  evalsha(_sha: string, _n: number, key: string, token: string, ttl: string): Promise<number> {
    return this.send('EVALSHA', () => {
      const raw = this.stored.get(key);
      if (raw === undefined) return 0;
      const rec = JSON.parse(raw) as { state: string; token?: string };
      if (rec.state !== 'in-flight' || rec.token !== token) return 0;
      if (ttl === '') this.stored.delete(key);
      return 1;
    });
  }

  /** Answers the oldest command, paused or not. */
  step(): void {
    this.queue.shift()!.answer();
  }

  resume(): void {
    this.paused = false;
    while (this.queue.length > 0) this.step();
  }

  private send<T>(name: string, run: () => T): Promise<T> {
    return new Promise<T>((resolve) => {
      this.queue.push({ name, answer: () => resolve(run()) });
      if (!this.paused) this.step();
    });
  }
}

const settle = () => new Promise((r) => setImmediate(r));

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 400 && !check(); i++) await new Promise((r) => setTimeout(r, 5));
  if (!check()) throw new Error('condition never held');
}

describe('IdempotencyService taking back claims Redis stored after the request gave up', () => {
  it('sends no SET after giving up, so a release that finds nothing can never be followed by the claim it meant to take back', async () => {
    const redis = new OneConnection();
    const service = new IdempotencyService(redis as unknown as Redis, new RedisKeys('t:'), resolveRequestPoliciesOptions({ redisTimeoutMs: 30 }));
    const key = service.storeKeyFor({ tenantId: 'tenant', callerId: 'client' } as never, 'k');
    // Another replica's request holds the key.
    redis.stored.set(key, JSON.stringify({ state: 'in-flight', token: 'other', fingerprint: 'f' }));

    // Redis is paused: the SET NX waits, the request gives up (503) and its claim is to be taken back.
    await expect(service.claim(key, 'f')).rejects.toBeInstanceOf(RedisUnavailableError);
    expect(redis.waiting).toEqual(['SET']);
    await until(() => redis.waiting.length === 2); // the sweep's release, which times out in turn
    expect(redis.waiting).toEqual(['SET', 'EVALSHA']);

    // The SET is answered: the key is held. A claim loop still going reads who holds it (a GET);
    // one that knows it gave up sends nothing more.
    redis.step();
    await settle();
    expect(redis.waiting[0]).toBe('EVALSHA');

    // The next sweep's release goes out; the other replica lets go of the key; Redis resumes at once.
    await until(() => redis.waiting.filter((name) => name === 'EVALSHA').length === 2);
    redis.stored.delete(key);
    redis.resume();
    // Had a GET gone out, it found the key free, and the loop would send a second SET, answered after
    // the sweep's release had found nothing and forgotten the claim: it would stand for its whole TTL.
    await new Promise((r) => setTimeout(r, 600)); // two more sweeps
    expect(redis.stored.has(key)).toBe(false);
    expect(redis.waiting).toEqual([]);
  });
});
