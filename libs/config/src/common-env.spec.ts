import { commonEnv } from './common-env';
import { ConfigError, loadConfig } from './load-config';

const load = (env: NodeJS.ProcessEnv) => loadConfig(env, commonEnv);

describe('commonEnv: TRUST_PROXY and METRICS_PORT, validated at start-up for every app', () => {
  it('TRUST_PROXY is a hop count, 0 (trust no proxy) by default', () => {
    expect(load({}).TRUST_PROXY).toBe(0);
    expect(load({ TRUST_PROXY: '2' }).TRUST_PROXY).toBe(2);
    for (const bad of ['true', 'loopback', '-1', '1.5', '17']) {
      expect(() => load({ TRUST_PROXY: bad })).toThrow(ConfigError);
      expect(() => load({ TRUST_PROXY: bad })).toThrow(/^invalid configuration: TRUST_PROXY is invalid \(Invalid proxy hop count input/);
    }
  });

  it('METRICS_PORT is a port, or unset (false: no internal listener)', () => {
    expect(load({}).METRICS_PORT).toBe(false);
    expect(load({ METRICS_PORT: '' }).METRICS_PORT).toBe(false);
    expect(load({ METRICS_PORT: '9464' }).METRICS_PORT).toBe(9464);
    expect(load({ METRICS_PORT: '0' }).METRICS_PORT).toBe(0);
    for (const bad of ['metrics', '70000', '-1']) expect(() => load({ METRICS_PORT: bad })).toThrow(/^invalid configuration: METRICS_PORT is invalid/);
  });

  it('DATABASE_URL and REDIS_URL: a URL of their scheme, refused without the value (it may hold a password) in the one line', () => {
    expect(load({ DATABASE_URL: 'postgresql://app:pw@db:5432/flagship?sslmode=verify-full' }).DATABASE_URL).toMatch(/^postgresql:/);
    expect(load({ REDIS_URL: 'rediss://:pw@cache:6379' }).REDIS_URL).toMatch(/^rediss:/);
    for (const [name, bad] of [
      ['DATABASE_URL', 'postgres://app:hunter2-secret@db:port/flagship'],
      ['DATABASE_URL', 'mysql://app:hunter2-secret@db/flagship'],
      ['REDIS_URL', 'rediss://:hunter2-secret@cache:port'],
    ] as const) {
      expect(() => load({ [name]: bad })).toThrow(new RegExp(`^invalid configuration: ${name} is invalid`));
      expect(() => load({ [name]: bad })).not.toThrow(/hunter2/);
    }
  });

  it('DATABASE_SSL_MODE is one of libpq\'s modes the driver honours, or empty (the URL\'s sslmode decides)', () => {
    expect(load({}).DATABASE_SSL_MODE).toBe('');
    expect(load({ DATABASE_SSL_MODE: 'verify-full' }).DATABASE_SSL_MODE).toBe('verify-full');
    for (const bad of ['prefer', 'allow', 'true', 'verify_full']) expect(() => load({ DATABASE_SSL_MODE: bad })).toThrow(/^invalid configuration: DATABASE_SSL_MODE is invalid/);
  });
});
