import { Logger, type LoggerService } from '@nestjs/common';
import type { ModuleRef } from '@nestjs/core';
import { OutageLog } from './outage-log';
import type { ReadinessCheck } from './readiness';

/** A store whose readiness the test switches. */
class Store implements ReadinessCheck {
  up = false;
  constructor(readonly name: string) {}
  async check(): Promise<void> {
    if (!this.up) throw new Error(`${this.name} down`);
  }
}
class PostgresCheck extends Store {}
class RedisCheck extends Store {}

const lines: Array<[string, string]> = [];
const recorder: LoggerService = {
  log: (m: unknown) => void lines.push(['log', String(m)]),
  warn: (m: unknown) => void lines.push(['warn', String(m)]),
  error: (m: unknown) => void lines.push(['error', String(m)]),
};

const until = async (cond: () => boolean) => {
  for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
};

describe('OutageLog', () => {
  const postgres = new PostgresCheck('postgres');
  const redis = new RedisCheck('redis');
  let outages: OutageLog;

  beforeEach(() => {
    lines.length = 0;
    Logger.overrideLogger(recorder);
    postgres.up = true;
    redis.up = true;
    const moduleRef = { get: (t: unknown) => (t === PostgresCheck ? postgres : redis) } as unknown as ModuleRef;
    outages = new OutageLog(moduleRef, [PostgresCheck, RedisCheck], 10);
  });
  afterEach(() => {
    outages.onApplicationShutdown();
    Logger.overrideLogger(false);
  });

  it('logs an outage once however many requests it fails, and its end once the store answers', async () => {
    postgres.up = false;
    for (let i = 0; i < 50; i++) outages.onDependencyFailure({ dependency: 'postgres', reason: 'Connection terminated unexpectedly' });
    expect(outages.down).toEqual(['postgres']);
    await new Promise((r) => setTimeout(r, 50));
    expect(outages.down).toEqual(['postgres']);
    postgres.up = true;
    await until(() => outages.down.length === 0);
    expect(lines).toEqual([
      ['warn', expect.stringMatching(/^postgres is unreachable \(Connection terminated unexpectedly\)/)],
      ['log', expect.stringMatching(/^postgres is back after [\d.]+ s; 50 request\(s\) were answered 503/)],
    ]);
  });

  it('names the store behind a bare socket error by asking the readiness checks', async () => {
    redis.up = false;
    outages.onDependencyFailure({ dependency: undefined, reason: 'ECONNRESET read ECONNRESET' });
    await until(() => outages.down.length > 0);
    expect(outages.down).toEqual(['redis']);
    redis.up = true;
    await until(() => outages.down.length === 0);
    expect(lines.map(([level, m]) => [level, m.split(' (')[0].split(' after')[0]])).toEqual([
      ['warn', 'redis is unreachable'],
      ['log', 'redis is back'],
    ]);
  });
});
