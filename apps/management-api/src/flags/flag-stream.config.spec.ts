import { loadManagementApiConfig } from '../env.schema';

describe('flag-data stream settings', () => {
  const base = { NODE_ENV: 'test', IDP_MODE: 'dev' };

  it('have the documented defaults: allowances by plan, free lower than paid', () => {
    const c = loadManagementApiConfig(base);
    expect([c.FLAG_STREAMS_PER_TENANT_FREE, c.FLAG_STREAMS_PER_TENANT_STANDARD, c.FLAG_STREAMS_PER_TENANT_PREMIUM]).toEqual([10, 50, 200]);
    expect([c.FLAG_STREAMS_PER_USER, c.FLAG_STREAMS_PER_CLIENT, c.FLAG_STREAMS_PER_ADDRESS, c.FLAG_STREAMS_PER_PROCESS]).toEqual([10, 200, 200, 5000]);
  });

  it('refuse anything but a whole number of at least 1, naming the setting', () => {
    for (const value of ['0', '-3', '2.5']) {
      expect(() => loadManagementApiConfig({ ...base, FLAG_STREAMS_PER_ADDRESS: value })).toThrow('invalid configuration: FLAG_STREAMS_PER_ADDRESS must be a whole number of at least 1');
    }
    expect(() => loadManagementApiConfig({ ...base, FLAG_STREAMS_PER_TENANT_PREMIUM: 'lots' })).toThrow(/FLAG_STREAMS_PER_TENANT_PREMIUM/);
  });

  it('stop at the old single allowance rather than ignore it, naming its replacements', () => {
    expect(() => loadManagementApiConfig({ ...base, FLAG_STREAMS_PER_TENANT: '50' })).toThrow(
      'invalid configuration: FLAG_STREAMS_PER_TENANT is replaced by FLAG_STREAMS_PER_TENANT_FREE, FLAG_STREAMS_PER_TENANT_STANDARD and FLAG_STREAMS_PER_TENANT_PREMIUM',
    );
  });
});
