import { BudgetedScopes } from './budgeted-scopes';

const scope = (n: number, over: Partial<{ tenantId: string; clientId: string; productKey: string }> = {}) => ({ tenantId: `t-${n}`, clientId: 'c', productKey: 'core', ...over });

describe('BudgetedScopes', () => {
  it('knows a scope once noted as budgeted, and forgets it once noted as not', () => {
    const hints = new BudgetedScopes();
    expect(hints.has(scope(1))).toBe(false);
    hints.note(scope(1), true);
    expect(hints.has(scope(1))).toBe(true);
    hints.note(scope(1), false);
    expect(hints.has(scope(1))).toBe(false);
  });

  it('tells scopes apart by tenant, client and product key', () => {
    const hints = new BudgetedScopes();
    hints.note(scope(1), true);
    expect(hints.has(scope(2))).toBe(false);
    expect(hints.has(scope(1, { clientId: 'other' }))).toBe(false);
    expect(hints.has(scope(1, { productKey: 'insights' }))).toBe(false);
  });

  it('holds at most its capacity, the oldest leaving first', () => {
    const hints = new BudgetedScopes(3);
    for (const n of [1, 2, 3, 4]) hints.note(scope(n), true);
    expect(hints.size).toBe(3);
    expect([1, 2, 3, 4].map((n) => hints.has(scope(n)))).toEqual([false, true, true, true]);
  });

  it('noting a scope it holds again, at capacity, evicts nothing', () => {
    const hints = new BudgetedScopes(2);
    hints.note(scope(1), true);
    hints.note(scope(2), true);
    hints.note(scope(2), true);
    expect([1, 2].map((n) => hints.has(scope(n)))).toEqual([true, true]);
  });
});
