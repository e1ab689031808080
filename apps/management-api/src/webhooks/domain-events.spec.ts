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

describe('a LaunchDarkly import records its domain events in its transaction', () => {
  it('records flag.created for a new key and flag.updated for one it replaces', async () => {
    const s = flagServices();
    const ld = (key: string) => ({ key, on: true, variations: [true, false], offVariation: 1, fallthrough: { variation: 0 }, targets: [], rules: [], prerequisites: [], salt: key });
    await s.service.create(TENANT, undefined, ALICE, { key: 'old', name: 'Old', type: 'boolean', defaultValue: false });
    s.recorded.length = 0;
    await s.imports.importLaunchDarkly(TENANT, 'staging', ALICE, { flags: { old: ld('old'), fresh: ld('fresh') } });
    expect(s.recorded.map((e) => [e.type, e.data['flagKey'], e.data['environment'], e.data['action']]).sort()).toEqual([
      ['flag.created', 'fresh', 'staging', 'import'],
      ['flag.updated', 'old', 'staging', 'import'],
    ]);
  });
});
