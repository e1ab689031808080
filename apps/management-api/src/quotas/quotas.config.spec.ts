import { loadManagementApiConfig } from '../env.schema';

describe('quota settings', () => {
  const base = { NODE_ENV: 'test', IDP_MODE: 'dev' };

  it('have documented defaults', () => {
    const c = loadManagementApiConfig(base);
    expect([c.QUOTA_FLAGS_PER_TENANT, c.QUOTA_ENVIRONMENTS_PER_TENANT, c.QUOTA_OAUTH_CLIENTS_PER_TENANT, c.QUOTA_TENANTS_PER_USER]).toEqual([5000, 20, 50, 10]);
  });

  it('refuse anything but a whole number of at least 1, naming the setting', () => {
    for (const value of ['0', '-3', '2.5']) {
      expect(() => loadManagementApiConfig({ ...base, QUOTA_FLAGS_PER_TENANT: value })).toThrow('invalid configuration: QUOTA_FLAGS_PER_TENANT must be a whole number of at least 1');
    }
    expect(() => loadManagementApiConfig({ ...base, QUOTA_TENANTS_PER_USER: 'many' })).toThrow(/QUOTA_TENANTS_PER_USER/);
  });
});
