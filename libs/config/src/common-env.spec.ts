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
});
