import type { TransactionRunner, Tx } from '@flagship/persistence';
import type { BindingRow } from '../gateway-bindings/gateway-bindings.repository';
import { snapshotTransactions } from '../testing/inline-transactions';
import { type ClaimedRollout, MAX_DECISIONS_LISTED, type PlannedBinding, type RolloutDecisionRow, RolloutsRepository, type RolloutState } from './rollouts.repository';

type DecisionAt = RolloutDecisionRow & { tenantId: string; productKey: string };
/** A state with the creation time of the binding it belongs to: a binding deleted (and bound again) takes its state with it, as the foreign key's cascade does. */
type StateOf = RolloutState & { boundAt: number };

interface State {
  states: StateOf[];
  decisions: DecisionAt[];
  lastId: number;
}

// Copies through JSON (dates revived by field), as jsonb stores plans and figures.
const json = <T>(v: T): T => (v === undefined ? v : (JSON.parse(JSON.stringify(v)) as T));
const copyState = <S extends RolloutState>(s: S): S => ({ ...s, stageStartedAt: new Date(s.stageStartedAt), nextCheckAt: new Date(s.nextCheckAt), updatedAt: new Date(s.updatedAt) });
const copyDecision = (d: DecisionAt): DecisionAt => ({ ...d, figures: json(d.figures), createdAt: new Date(d.createdAt) });
const copy = (s: State): State => ({ states: s.states.map(copyState), decisions: s.decisions.map(copyDecision), lastId: s.lastId });
const planned = (b: BindingRow): PlannedBinding => ({ tenantId: b.tenantId, productKey: b.productKey, flagKey: b.flagKey, environment: b.environment, version: b.version, rolloutPlan: json(b.rolloutPlan) ?? null });

/**
 * In-memory twin of SqlRolloutsRepository for the service's unit spec (the agreement spec holds both to
 * the same cases). The bindings are the gateway bindings' fake, as claimDue joins gateway_bindings in
 * Postgres. No locks (a unit test runs one pass at a time; the race is proven on Postgres): `locked`
 * stands for bindings another replica holds (`tenantId/productKey`), which claimDue skips.
 */
export class FakeRolloutsRepository extends RolloutsRepository {
  private data: State = { states: [], decisions: [], lastId: 0 };
  private clock = Date.parse('2026-01-01T00:00:00Z');
  readonly locked = new Set<string>();

  readonly transactions: Pick<TransactionRunner, 'run'> = snapshotTransactions({ get: () => this.data, set: (saved) => void (this.data = saved) }, copy);

  constructor(private readonly bindings: { all(): BindingRow[] }) {
    super();
  }

  private boundAt(tenantId: string, productKey: string): number | undefined {
    return this.bindings
      .all()
      .find((b) => b.tenantId === tenantId && b.productKey === productKey)
      ?.createdAt.getTime();
  }

  private at(tenantId: string, productKey: string): RolloutState | undefined {
    const boundAt = this.boundAt(tenantId, productKey);
    const found = this.data.states.find((s) => s.tenantId === tenantId && s.productKey === productKey && s.boundAt === boundAt);
    if (!found) return undefined;
    const { boundAt: _b, ...state } = copyState(found);
    return state;
  }

  async claimDue(_m: Tx, now: Date): Promise<ClaimedRollout | null> {
    const due = this.bindings
      .all()
      .filter((b) => b.rolloutPlan !== null && !this.locked.has(`${b.tenantId}/${b.productKey}`))
      .map((b) => ({ b, s: this.at(b.tenantId, b.productKey) }))
      .filter(({ b, s }) => !s || s.bindingVersion !== b.version || (s.status === 'running' && s.nextCheckAt.getTime() <= now.getTime()))
      .sort((x, y) => (x.s?.nextCheckAt ?? x.b.updatedAt).getTime() - (y.s?.nextCheckAt ?? y.b.updatedAt).getTime());
    const first = due[0];
    return first ? { binding: planned(first.b), state: first.s ?? null } : null;
  }

  async state(tenantId: string, productKey: string): Promise<RolloutState | null> {
    return this.at(tenantId, productKey) ?? null;
  }

  async saveState(_m: Tx, s: Omit<RolloutState, 'updatedAt'>): Promise<void> {
    const boundAt = this.boundAt(s.tenantId, s.productKey);
    if (boundAt === undefined) throw Object.assign(new Error('insert or update on table "rollout_states" violates foreign key constraint'), { code: '23503' });
    this.clock += 1000;
    const row = copyState({ ...s, updatedAt: new Date(this.clock), boundAt });
    this.data.states = [...this.data.states.filter((x) => !(x.tenantId === s.tenantId && x.productKey === s.productKey)), row];
  }

  async logDecision(_m: Tx, tenantId: string, productKey: string, d: Omit<RolloutDecisionRow, 'id' | 'createdAt'>, at: Date): Promise<void> {
    this.data.lastId += 1;
    this.data.decisions.push({ ...d, figures: json(d.figures) ?? null, tenantId, productKey, id: String(this.data.lastId), createdAt: new Date(at) });
  }

  async decisions(tenantId: string, productKey: string): Promise<RolloutDecisionRow[]> {
    return this.data.decisions
      .filter((d) => d.tenantId === tenantId && d.productKey === productKey)
      .reverse()
      .slice(0, MAX_DECISIONS_LISTED)
      .map((d) => {
        const { tenantId: _t, productKey: _p, ...row } = copyDecision(d);
        return row;
      });
  }

  async binding(tenantId: string, productKey: string): Promise<PlannedBinding | null> {
    const b = this.bindings.all().find((x) => x.tenantId === tenantId && x.productKey === productKey);
    return b ? planned(b) : null;
  }
}
