import { loadManagementApiConfig } from '../env.schema';

describe('quota settings', () => {
  const base = { NODE_ENV: 'test', IDP_MODE: 'dev' };

  it('have documented defaults', () => {
    const c = loadManagementApiConfig(base);
    expect([c.QUOTA_FLAGS_PER_TENANT, c.QUOTA_ENVIRONMENTS_PER_TENANT, c.QUOTA_OAUTH_CLIENTS_PER_TENANT, c.QUOTA_TENANTS_PER_USER]).toEqual([5000, 20, 50, 10]);
  });

  it('bound flags by bytes by default: 32 KiB a definition, 8 MiB a tenant and a held set, 64 MiB the store', () => {
    const c = loadManagementApiConfig(base);
    expect([c.FLAG_MAX_BYTES, c.QUOTA_FLAG_BYTES_PER_TENANT, c.FLAG_SET_MAX_BYTES, c.FLAG_STORE_MAX_BYTES]).toEqual([32768, 8388608, 8388608, 67108864]);
  });

  it('bound segments by default: 500 a tenant taking 8 MiB, 512 KiB and 10,000 keys a segment', () => {
    const c = loadManagementApiConfig(base);
    expect([c.QUOTA_SEGMENTS_PER_TENANT, c.QUOTA_SEGMENT_BYTES_PER_TENANT, c.SEGMENT_MAX_BYTES, c.SEGMENT_MAX_KEYS]).toEqual([500, 8388608, 524288, 10000]);
    expect(() => loadManagementApiConfig({ ...base, SEGMENT_MAX_KEYS: '0' })).toThrow('invalid configuration: SEGMENT_MAX_KEYS must be a whole number of at least 1');
  });

  it('refuse byte bounds a tenant within its quota could not be served under', () => {
    expect(() => loadManagementApiConfig({ ...base, QUOTA_FLAG_BYTES_PER_TENANT: '16777216' })).toThrow(
      'invalid configuration: QUOTA_FLAG_BYTES_PER_TENANT (16777216) must not be more than FLAG_SET_MAX_BYTES (8388608)',
    );
    expect(() => loadManagementApiConfig({ ...base, FLAG_SET_MAX_BYTES: '100000000' })).toThrow(/FLAG_SET_MAX_BYTES \(100000000\) must not be more than FLAG_STORE_MAX_BYTES/);
    expect(() => loadManagementApiConfig({ ...base, FLAG_MAX_BYTES: '0' })).toThrow('invalid configuration: FLAG_MAX_BYTES must be a whole number of at least 1');
  });

  it('refuse anything but a whole number of at least 1, naming the setting', () => {
    for (const value of ['0', '-3', '2.5']) {
      expect(() => loadManagementApiConfig({ ...base, QUOTA_FLAGS_PER_TENANT: value })).toThrow('invalid configuration: QUOTA_FLAGS_PER_TENANT must be a whole number of at least 1');
    }
    expect(() => loadManagementApiConfig({ ...base, QUOTA_TENANTS_PER_USER: 'many' })).toThrow(/QUOTA_TENANTS_PER_USER/);
  });
});
