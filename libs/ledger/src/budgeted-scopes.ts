/** The requests a budget hint speaks of: a tenant's OAuth client and product key. */
export interface Scope {
  tenantId: string;
  clientId: string;
  productKey: string;
}

/**
 * A planner aid for admission: the scopes (tenant, client, product key) last found under a budget, so
 * their requests go straight to the budgeted statement instead of being refused by the plain one first.
 * A hint only: a budget set since is found by the plain statement's probe, one removed since by the
 * budgeted one, and a scope forgotten costs one statement more. Bounded; the oldest entry leaves first.
 */
export class BudgetedScopes {
  private readonly scopes = new Set<string>();

  constructor(private readonly capacity = 10_000) {}

  has(s: Scope): boolean {
    return this.scopes.has(keyOf(s));
  }

  /** What the budgeted statement said of a scope: under a budget or not. */
  note(s: Scope, budgeted: boolean): void {
    const key = keyOf(s);
    if (!budgeted) {
      this.scopes.delete(key);
      return;
    }
    if (this.scopes.size >= this.capacity && !this.scopes.has(key)) this.scopes.delete(this.scopes.values().next().value!);
    this.scopes.add(key);
  }

  get size(): number {
    return this.scopes.size;
  }
}

const keyOf = (s: Scope): string => `${s.tenantId} ${s.clientId} ${s.productKey}`;
