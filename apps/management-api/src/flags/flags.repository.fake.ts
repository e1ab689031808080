import { randomUUID } from 'node:crypto';
import { flagDefinitionBytes, type FlagDefinition, SERVER_ONLY } from '@flagship/flag-evaluation';
import { type MeasuredDefinition, servedValueDigest, type TransactionRunner, type Tx } from '@flagship/persistence';
import type { PageCursor } from '@flagship/service-kit';
import { snapshotTransactions } from '../testing/inline-transactions';
import { definitionOf } from './flag.mapper';
import { type LifecycleFilter, matchesLifecycle } from './flag-lifecycle';
import type { FlagAuditEntity, FlagEntity, FlagEnvironmentEntity } from './flag.entity';
import {
  type AtVersion,
  type AuditRecord,
  type FlagGlobalFields,
  type FlagRow,
  FlagsRepository,
  type FlagTargetingFields,
  type ImportedFlagFields,
  type NewFlagFields,
} from './flags.repository';

interface State {
  flags: Map<string, FlagEntity>;
  /** Rows of every environment, with the definition's stored size (flag_environments.definition_bytes). */
  envs: Array<FakeEnvRow>;
  audit: FlagAuditEntity[];
  /** `tenant \0 environment \0 flag key` -> last evaluated (flag_evaluations). */
  evaluations: Map<string, Date>;
}

/** A flag_environments row with what the entity does not read: the stored size and served-value digest. */
type FakeEnvRow = FlagEnvironmentEntity & { definitionBytes: number; servingDigest: string | null };

const evaluationKey = (tenantId: string, environment: string, key: string): string => `${tenantId}\0${environment}\0${key}`;

/** Postgres' unique violation (code 23505), as isUniqueViolation reads it. */
const uniqueViolation = (): Error => Object.assign(new Error('duplicate key value violates unique constraint "flags_tenant_id_key_key"'), { code: '23505' });

/**
 * In-memory twin of SqlFlagsRepository for service unit tests: same contract, no I/O. It holds the
 * tenants' environments the real one reads from their table (`environments`), and a transaction
 * runner (`transactions`) that undoes what a throwing transaction wrote, as Postgres does, so
 * all-or-nothing writes are proven here too. `importsUnderWay` stands for another import holding a
 * tenant's import lock. There are no locks to take: a unit test runs one write at a time.
 */
export class FakeFlagsRepository extends FlagsRepository {
  private state: State = { flags: new Map(), envs: [], audit: [], evaluations: new Map() };
  /** tenant id -> its environment keys (the environments table). */
  readonly environments = new Map<string, string[]>();
  readonly importsUnderWay = new Set<string>();
  private clock = Date.parse('2026-01-01T00:00:00Z');
  private auditId = 0;

  readonly transactions: Pick<TransactionRunner, 'run'> = snapshotTransactions({ get: () => this.state, set: (saved) => void (this.state = saved) }, copy);

  /** What the flags-per-tenant quota counts. */
  countFlags(tenantId: string): number {
    return [...this.state.flags.values()].filter((f) => f.tenantId === tenantId).length;
  }

  /** What the flag-bytes-per-tenant quota counts: every environment's stored definition size. */
  countBytes(tenantId: string): number {
    return this.state.envs.filter((e) => e.tenantId === tenantId).reduce((sum, e) => sum + e.definitionBytes, 0);
  }

  /** Every audit record, oldest first (for assertions). */
  get auditRows(): readonly FlagAuditEntity[] {
    return this.state.audit;
  }

  /** The fake's clock (what it dates writes with). */
  now(): Date {
    return new Date(this.clock);
  }

  /** Moves the clock (writes are dated by it, one millisecond apart). */
  setNow(at: Date): void {
    this.clock = at.getTime();
  }

  /** What an evaluator's recorder writes (flag_evaluations): the later of what is there and `at`. */
  recordEvaluation(tenantId: string, environment: string, key: string, at: Date): void {
    const k = evaluationKey(tenantId, environment, key);
    const before = this.state.evaluations.get(k);
    if (before === undefined || before < at) this.state.evaluations.set(k, new Date(at.getTime()));
  }

  private tick(): Date {
    this.clock += 1;
    return new Date(this.clock);
  }

  private flagOf(tenantId: string, key: string): FlagEntity | undefined {
    for (const f of this.state.flags.values()) if (f.tenantId === tenantId && f.key === key) return f;
    return undefined;
  }

  private envOf(tenantId: string, flagId: string, environment: string): FakeEnvRow | undefined {
    return this.state.envs.find((e) => e.tenantId === tenantId && e.flagId === flagId && e.environmentKey === environment);
  }

  private row(tenantId: string, flag: FlagEntity | undefined, environment: string): FlagRow | null {
    if (!flag) return null;
    const env = this.envOf(tenantId, flag.id, environment);
    const evaluated = this.state.evaluations.get(evaluationKey(tenantId, environment, flag.key));
    return env ? { flag: copy(flag), env: envEntity(env), lastEvaluatedAt: evaluated ? new Date(evaluated.getTime()) : null } : null;
  }

  async findByKey(tenantId: string, key: string): Promise<FlagEntity | null> {
    const flag = this.flagOf(tenantId, key);
    return flag ? copy(flag) : null;
  }

  async findRow(tenantId: string, key: string, environment: string): Promise<FlagRow | null> {
    return this.row(tenantId, this.flagOf(tenantId, key), environment);
  }

  async lockRow(_m: Tx, tenantId: string, key: string, environment: string): Promise<FlagRow | null> {
    return this.row(tenantId, this.flagOf(tenantId, key), environment);
  }

  async tryLockImport(_m: Tx, tenantId: string): Promise<boolean> {
    return !this.importsUnderWay.has(tenantId);
  }

  async lockRows(_m: Tx, tenantId: string, keys: readonly string[], environment: string): Promise<Map<string, FlagRow>> {
    const out = new Map<string, FlagRow>();
    for (const key of [...new Set(keys)].sort(byCodePoint)) {
      const row = this.row(tenantId, this.flagOf(tenantId, key), environment);
      if (row) out.set(key, row);
    }
    return out;
  }

  async envRowsOfMany(_m: Tx, tenantId: string, flagIds: readonly string[]): Promise<FlagEnvironmentEntity[]> {
    return this.state.envs.filter((e) => e.tenantId === tenantId && flagIds.includes(e.flagId)).map(envEntity);
  }

  async findRows(tenantId: string, keys: readonly string[], environment: string): Promise<FlagRow[]> {
    return keys.map((key) => this.row(tenantId, this.flagOf(tenantId, key), environment)).filter((r): r is FlagRow => r !== null);
  }

  async environmentsOfMany(tenantId: string, flagIds: readonly string[]): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>();
    for (const id of flagIds) {
      const envs = this.environmentsOfSync(tenantId, id);
      if (envs.length > 0) out.set(id, envs);
    }
    return out;
  }

  async insertMany(m: Tx, tenantId: string, flags: readonly ImportedFlagFields[]): Promise<Map<string, string>> {
    const ids = new Map<string, string>();
    for (const f of flags) {
      const flag = await this.insert(m, tenantId, { key: f.key, projectId: null, name: f.key, type: f.type, defaultValue: f.defaultValue, description: '', tags: [], variations: f.variations, clientSideAvailability: f.clientSideAvailability });
      ids.set(f.key, flag.id);
    }
    return ids;
  }

  async updateImportedMany(m: Tx, tenantId: string, rows: ReadonlyArray<AtVersion & Pick<FlagEntity, 'variations' | 'clientSideAvailability'>>): Promise<number> {
    let affected = 0;
    for (const r of rows) if (await this.updateFlag(m, tenantId, r.flagId, r.expectedVersion, { variations: r.variations, clientSideAvailability: r.clientSideAvailability })) affected++;
    return affected;
  }

  async replaceTargetingMany(m: Tx, tenantId: string, environment: string, rows: ReadonlyArray<AtVersion & FlagTargetingFields>): Promise<number> {
    let affected = 0;
    for (const { flagId, expectedVersion, ...targeting } of rows) if (await this.updateEnv(m, tenantId, flagId, environment, expectedVersion, targeting)) affected++;
    return affected;
  }

  async envRows(_m: Tx, tenantId: string, flagId: string): Promise<FlagEnvironmentEntity[]> {
    return this.state.envs.filter((e) => e.tenantId === tenantId && e.flagId === flagId).map(envEntity);
  }

  async list(tenantId: string, environment: string, limit: number, after?: PageCursor, projectId?: string, lifecycle?: LifecycleFilter): Promise<FlagRow[]> {
    const at = (f: FlagEntity): [number, string] => [f.createdAt.getTime(), f.id];
    const afterKey: [number, string] | undefined = after ? [Date.parse(after.at), after.id] : undefined;
    return [...this.state.flags.values()]
      .filter((f) => f.tenantId === tenantId && (!projectId || f.projectId === projectId))
      .filter((f) => afterKey === undefined || compare(at(f), afterKey) > 0)
      .sort((a, b) => compare(at(a), at(b)))
      .map((f) => this.row(tenantId, f, environment))
      .filter((r): r is FlagRow => r !== null)
      .filter((r) => matchesLifecycle({ createdAt: r.flag.createdAt, lastEvaluatedAt: r.lastEvaluatedAt ?? null, servingOneVariationSince: r.env.servingOneVariationSince ?? null }, lifecycle))
      .slice(0, limit + 1);
  }

  async insert(_m: Tx, tenantId: string, fields: NewFlagFields, enabledIn?: string): Promise<FlagEntity> {
    if (this.flagOf(tenantId, fields.key)) throw uniqueViolation();
    const now = this.tick();
    const flag: FlagEntity = { ...copy(fields), clientSideAvailability: { ...(fields.clientSideAvailability ?? SERVER_ONLY) }, tenantId, id: randomUUID(), version: 1, createdAt: now, updatedAt: now };
    this.state.flags.set(flag.id, flag);
    for (const environment of this.environments.get(tenantId) ?? []) {
      this.state.envs.push({
        tenantId,
        flagId: flag.id,
        environmentKey: environment,
        enabled: environment === enabledIn,
        offValue: null,
        targets: [],
        rules: [],
        prerequisites: [],
        salt: null,
        version: 1,
        updatedAt: now,
        servingOneVariationSince: null,
        definitionBytes: 0,
        servingDigest: null,
      });
    }
    return copy(flag);
  }

  async updateFlag(_m: Tx, tenantId: string, flagId: string, expectedVersion: number, changes: Partial<FlagGlobalFields>): Promise<boolean> {
    const flag = this.state.flags.get(flagId);
    if (!flag || flag.tenantId !== tenantId || flag.version !== expectedVersion) return false;
    Object.assign(flag, copy(changes), { version: flag.version + 1, updatedAt: this.tick() });
    return true;
  }

  async updateEnv(_m: Tx, tenantId: string, flagId: string, environment: string, expectedVersion: number, changes: Partial<FlagTargetingFields>): Promise<boolean> {
    const env = this.envOf(tenantId, flagId, environment);
    if (!env || env.version !== expectedVersion) return false;
    Object.assign(env, copy(changes), { version: env.version + 1, updatedAt: this.tick() });
    return true;
  }

  async measure(_m: Tx, tenantId: string, flagIds: readonly string[]): Promise<MeasuredDefinition[]> {
    const measured: MeasuredDefinition[] = [];
    for (const env of this.state.envs) {
      const flag = this.state.flags.get(env.flagId);
      if (env.tenantId !== tenantId || !flag || !flagIds.includes(flag.id)) continue;
      const def = definitionOf(flag, env);
      const bytes = flagDefinitionBytes(def);
      measured.push({ flagId: flag.id, key: flag.key, environment: env.environmentKey, before: env.definitionBytes, bytes });
      env.definitionBytes = bytes;
      // As measureFlagDefinitions: the date kept while the same one value is served.
      const digest = servedValueDigest(def);
      if (digest !== env.servingDigest) env.servingOneVariationSince = digest === null ? null : new Date(this.clock);
      env.servingDigest = digest;
    }
    return measured.sort((a, b) => byCodePoint(a.key, b.key) || byCodePoint(a.environment, b.environment));
  }

  async delete(_m: Tx, tenantId: string, flagId: string): Promise<void> {
    const flag = this.state.flags.get(flagId);
    if (!flag || flag.tenantId !== tenantId) return;
    this.state.flags.delete(flagId);
    this.state.envs = this.state.envs.filter((e) => e.flagId !== flagId);
    for (const k of this.state.evaluations.keys()) if (k.startsWith(`${tenantId}\0`) && k.endsWith(`\0${flag.key}`)) this.state.evaluations.delete(k);
  }

  async dependents(tenantId: string, key: string): Promise<string[]> {
    const keys = new Set<string>();
    for (const e of this.state.envs) {
      const flag = this.state.flags.get(e.flagId);
      if (e.tenantId === tenantId && flag && flag.key !== key && e.prerequisites.some((p) => p.key === key)) keys.add(flag.key);
    }
    return [...keys].sort(byCodePoint);
  }

  async environmentsOf(tenantId: string, flagId: string): Promise<string[]> {
    return this.environmentsOfSync(tenantId, flagId);
  }

  private environmentsOfSync(tenantId: string, flagId: string): string[] {
    return this.state.envs
      .filter((e) => e.tenantId === tenantId && e.flagId === flagId)
      .map((e) => e.environmentKey)
      .sort(byCodePoint);
  }

  async audit(m: Tx, row: AuditRecord & Pick<FlagAuditEntity, 'tenantId'>): Promise<void> {
    const { tenantId, ...record } = row;
    await this.auditMany(m, tenantId, [record]);
  }

  async auditMany(_m: Tx, tenantId: string, rows: readonly AuditRecord[]): Promise<void> {
    for (const r of rows) this.state.audit.push({ ...copy(r), id: String(++this.auditId), tenantId, createdAt: this.tick() });
  }

  async auditTrail(tenantId: string, flagKey: string): Promise<FlagAuditEntity[]> {
    return copy(this.state.audit.filter((a) => a.tenantId === tenantId && a.flagKey === flagKey));
  }

  async definitions(tenantId: string, environment: string): Promise<FlagDefinition[]> {
    return [...this.state.flags.values()]
      .filter((f) => f.tenantId === tenantId)
      .sort((a, b) => byCodePoint(a.key, b.key))
      .map((f) => this.row(tenantId, f, environment))
      .filter((r): r is FlagRow => r !== null)
      .map((r) => definitionOf(r.flag, r.env));
  }
}

/**
 * A deep copy of plain data (objects, arrays, dates), made in this realm: structuredClone's objects
 * come from Node's own realm, which the evaluator's plain-object checks refuse under jest's vm.
 */
function copy<T>(value: T): T {
  if (value instanceof Date) return new Date(value.getTime()) as T;
  if (Array.isArray(value)) return value.map(copy) as T;
  if (value instanceof Map) return new Map([...value].map(([k, v]) => [k, copy(v)])) as T;
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, copy(v)])) as T;
  return value;
}

/** The entity as the real repository reads it: no stored size. */
function envEntity(e: FakeEnvRow): FlagEnvironmentEntity {
  const { definitionBytes: _bytes, servingDigest: _digest, ...entity } = copy(e);
  return entity;
}

/** Postgres' C collation: by code point. */
function byCodePoint(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function compare(a: [number, string], b: [number, string]): number {
  return a[0] - b[0] || byCodePoint(a[1], b[1]);
}
