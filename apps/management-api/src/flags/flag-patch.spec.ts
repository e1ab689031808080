import { applyPatch, changesGlobals, changesTargeting } from './flag-patch';
import type { FlagRow } from './flags.repository';

const AT = new Date('2026-01-01T00:00:00Z');
const ROW: FlagRow = {
  flag: {
    tenantId: 't',
    id: 'f',
    key: 'checkout',
    projectId: null,
    name: 'Checkout',
    type: 'boolean',
    defaultValue: false,
    description: '',
    tags: ['a'],
    variations: [],
    clientSideAvailability: { usingEnvironmentId: false, usingMobileKey: false },
    version: 2,
    createdAt: AT,
    updatedAt: AT,
  },
  env: { tenantId: 't', flagId: 'f', environmentKey: 'staging', enabled: false, offValue: true, targets: [], rules: [], prerequisites: [], salt: 's', version: 5, updatedAt: AT },
};

describe('applyPatch', () => {
  it('maps global fields to the flag row and targeting to the environment’s row, only those sent', () => {
    const p = applyPatch(ROW, { name: 'New', tags: ['b'], enabled: true, offValue: undefined, description: undefined });
    expect(p.global).toEqual({ name: 'New', tags: ['b'] });
    expect(p.targeting).toEqual({ enabled: true });
    expect([p.flag.name, p.flag.tags, p.flag.description, p.env.enabled, p.env.offValue, p.env.salt]).toEqual(['New', ['b'], '', true, true, 's']);
    expect(p.changes).toEqual({ name: { from: 'Checkout', to: 'New' }, tags: { from: ['a'], to: ['b'] }, enabled: { from: false, to: true } });
    expect([changesGlobals(p), changesTargeting(p)]).toEqual([true, true]);
  });

  it('takes a null as a value: it resets the off value and the salt', () => {
    const p = applyPatch(ROW, { offValue: null, salt: null, projectId: null });
    expect([p.env.offValue, p.env.salt, p.targeting, p.global]).toEqual([null, null, { offValue: null, salt: null }, { projectId: null }]);
    expect(p.changes).toEqual({ projectId: { from: null, to: null }, offValue: { from: true, to: null }, salt: { from: 's', to: null } });
  });

  it('changes nothing, and leaves the rows as they were, when nothing was sent; it never touches what it was given', () => {
    const p = applyPatch(ROW, {});
    expect([changesGlobals(p), changesTargeting(p), p.changes]).toEqual([false, false, {}]);
    expect(p.flag).toEqual(ROW.flag);
    applyPatch(ROW, { name: 'Other', enabled: true });
    expect([ROW.flag.name, ROW.env.enabled]).toEqual(['Checkout', false]);
  });
});
