import { ALICE, flagServices, TENANT } from '../flags/flag-services.fixture';

describe('flag writes record their domain event in the write', () => {
  it('records flag.created, flag.updated (with the changes) and flag.deleted, and nothing for a refused write', async () => {
    const s = flagServices();
    await s.service.create(TENANT, undefined, ALICE, { key: 'beta', name: 'Beta', type: 'boolean', defaultValue: false });
    await s.service.update(TENANT, undefined, ALICE, 'beta', { enabled: true });
    await s.service.update(TENANT, undefined, ALICE, 'beta', {});
    await s.service.remove(TENANT, ALICE, 'beta');
    await s.service.remove(TENANT, ALICE, 'beta').catch(() => undefined);
    expect(s.recorded.map((e) => e.type)).toEqual(['flag.created', 'flag.updated', 'flag.deleted']);
    expect(s.recorded[1]!.data).toMatchObject({ flagKey: 'beta', environment: 'production', actor: ALICE.callerId });
    expect(s.recorded[1]!.data['changes']).toBeDefined();
  });
});
