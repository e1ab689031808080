import { roleAtLeast, isTenantRole, isPlan, isScope } from './index';

describe('domain value helpers', () => {
  it.each([
    ['admin', 'viewer', true],
    ['admin', 'admin', true],
    ['editor', 'viewer', true],
    ['editor', 'admin', false],
    ['viewer', 'editor', false],
  ] as const)('%s at least %s -> %s', (held, needed, expected) => {
    expect(roleAtLeast(held, needed)).toBe(expected);
  });

  it('recognises only the listed roles, plans and scopes', () => {
    expect(isTenantRole('editor')).toBe(true);
    expect(isTenantRole('owner')).toBe(false);
    expect(isPlan('premium')).toBe(true);
    expect(isPlan('enterprise')).toBe(false);
    expect(isScope('flags:evaluate')).toBe(true);
    expect(isScope('flags:*')).toBe(false);
  });
});
