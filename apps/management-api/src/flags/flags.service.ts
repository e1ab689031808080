import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG } from '@flagship/config';
import type { FlagType, JsonValue } from '@flagship/domain';
import {
  checkFlagDefinition,
  FLAG_FILE_VERSION,
  type EvaluationContext,
  type EvaluationResult,
  type FlagDefinition,
  prerequisiteBoundProblems,
  validateFlagDefinition,
  valueMatchesType,
  type Variation,
} from '@flagship/flag-evaluation';
import { FlagStore } from '@flagship/flag-store';
import { flagDefinitionFromRow, isUniqueViolation, type MeasuredDefinition, TransactionRunner, type Tx } from '@flagship/persistence';
import { ProblemException, validationProblem } from '@flagship/problem-details';
import { type CallerContext, decodeCursor } from '@flagship/service-kit';
import type { ManagementApiConfig } from '../env.schema';
import { EnvironmentsService } from '../environments/environments.service';
import { ProjectsService } from '../projects/projects.service';
import { Quotas } from '../quotas/quotas';
import { EvaluationCounter } from './evaluation-counter';
import { FlagEvents } from './flag-events';
import { addedBytes, largestAdditions, largestField, oversized, sizeErrors } from './flag-size';
import type { FlagEntity, FlagEnvironmentEntity } from './flag.entity';
import type { CreateFlagDto, EvaluationResultDto, FlagDto, UpdateFlagDto } from './flags.dto';
import { FlagProblems } from './flags.errors';
import { type FlagRow, FlagsRepository } from './flags.repository';
import { type ImportedFlag, mapLaunchDarklyFlags, parseLaunchDarklyData } from './launchdarkly-import';

export interface ImportResult {
  environment: string;
  created: string[];
  replaced: string[];
  skipped: Array<{ key: string; reason: string }>;
  rows: FlagRow[];
}

export const etagOf = (r: FlagRow): string => `"${r.flag.version}.${r.env.version}"`;

export function toFlagDto(r: FlagRow): FlagDto {
  const updated = r.env.updatedAt > r.flag.updatedAt ? r.env.updatedAt : r.flag.updatedAt;
  return {
    id: r.flag.id,
    key: r.flag.key,
    name: r.flag.name,
    type: r.flag.type,
    enabled: r.env.enabled,
    defaultValue: r.flag.defaultValue,
    description: r.flag.description,
    tags: r.flag.tags,
    projectId: r.flag.projectId,
    createdAt: r.flag.createdAt.toISOString(),
    updatedAt: updated.toISOString(),
    variations: r.flag.variations.map((v) => ({ id: v.id, name: v.name, value: v.value, description: v.description ?? '', weight: v.weight })),
    environment: r.env.environmentKey,
    offValue: r.env.offValue,
    targets: r.env.targets,
    rules: r.env.rules,
    prerequisites: r.env.prerequisites,
    salt: r.env.salt,
    version: `${r.flag.version}.${r.env.version}`,
    // Accepted but never-matching data (LaunchDarkly's semantics), shown on every read so a typo stays visible.
    warnings: checkFlagDefinition(definitionOf(r.flag, r.env)).warnings,
  };
}

export function toEvaluationDto(key: string, r: EvaluationResult): EvaluationResultDto {
  const out: EvaluationResultDto = { key, enabled: r.enabled, value: r.value, reason: r.reason };
  if (r.variationId !== undefined) out.variationId = r.variationId;
  if (r.ruleId !== undefined) out.ruleId = r.ruleId;
  if (r.ruleIndex !== undefined) out.ruleIndex = r.ruleIndex;
  if (r.errorKind !== undefined) out.errorKind = r.errorKind;
  return out;
}

const typeName = (t: FlagType): string => (t === 'json' ? 'a JSON object or array' : `a ${t}`);

/** `GET /api/flags/export` would shadow a flag with this key. */
const RESERVED_KEYS = ['export'];

/** Fields of the environment row PATCH may change. */
const ENV_FIELDS = ['enabled', 'offValue', 'targets', 'rules', 'prerequisites', 'salt'] as const;
const GLOBAL_FIELDS = ['name', 'description', 'defaultValue', 'tags', 'projectId', 'variations'] as const;
/** The fields of a request that are part of a flag's definition (what FLAG_MAX_BYTES bounds). */
const DEFINITION_FIELDS = ['defaultValue', 'flag_variations', 'variations', 'offValue', 'targets', 'rules', 'prerequisites', 'salt', 'enabled'] as const;

/**
 * Flags: global fields plus per-environment targeting (CONTRACT.md section 5). Every change is
 * validated with the evaluator's own validator, written with an audit record, and announced.
 */
@Injectable()
export class FlagsService {
  private readonly maxFlagBytes: number;

  constructor(
    @Inject(APP_CONFIG) config: ManagementApiConfig,
    private readonly transactions: TransactionRunner,
    private readonly repo: FlagsRepository,
    private readonly projects: ProjectsService,
    private readonly environments: EnvironmentsService,
    private readonly store: FlagStore,
    private readonly events: FlagEvents,
    private readonly counter: EvaluationCounter,
    private readonly quotas: Quotas,
  ) {
    this.maxFlagBytes = config.FLAG_MAX_BYTES;
  }

  async list(tenantId: string, env: string | undefined, limit: number, cursor?: string, projectId?: string): Promise<FlagRow[]> {
    return this.repo.list(tenantId, await this.environments.resolve(tenantId, env), limit, decodeCursor(cursor), projectId);
  }

  async get(tenantId: string, env: string | undefined, key: string): Promise<FlagRow> {
    const row = await this.repo.findRow(tenantId, key, await this.environments.resolve(tenantId, env));
    if (!row) throw this.notFound(key);
    return row;
  }

  async create(tenantId: string, env: string | undefined, caller: CallerContext, dto: CreateFlagDto, projectIdFromPath?: string): Promise<FlagRow> {
    const environment = await this.environments.resolve(tenantId, env);
    const errors: Record<string, string> = {};
    if (RESERVED_KEYS.includes(dto.key)) errors['key'] = `${dto.key} is reserved by the API's paths`;
    if (dto.defaultValue === undefined) errors['defaultValue'] = 'is required';
    else if (!valueMatchesType(dto.type, dto.defaultValue)) errors['defaultValue'] = `must be ${typeName(dto.type)}`;
    const variations = this.buildVariations(dto, errors);
    const projectId = projectIdFromPath ?? dto.projectId ?? null;
    if (projectIdFromPath) await this.projects.found(tenantId, projectIdFromPath);
    else if (projectId && !(await this.projects.exists(tenantId, projectId))) errors['projectId'] = 'names no project of this tenant';
    if (Object.keys(errors).length) throw validationProblem(errors);
    try {
      await this.transactions.run(async (m) => {
        await this.quotas.reserve(m, 'flags-per-tenant', tenantId);
        const flag = await this.repo.insert(
          m,
          tenantId,
          { key: dto.key, projectId, name: dto.name, type: dto.type, defaultValue: dto.defaultValue, description: dto.description ?? '', tags: dto.tags ?? [], variations },
          dto.enabled ? environment : undefined,
        );
        await this.boundSize(m, tenantId, [flag.id], () => largestField(dto as unknown as Record<string, unknown>, DEFINITION_FIELDS) ?? 'defaultValue');
        await this.repo.audit(m, { tenantId, flagKey: dto.key, environmentKey: null, action: 'create', actor: caller.callerId, changes: { ...dto } });
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw new ProblemException(FlagProblems['flag-exists'], `A flag with key ${dto.key} exists in this tenant.`);
      throw err;
    }
    const row = await this.get(tenantId, environment, dto.key);
    await this.events.changed(tenantId, await this.repo.environmentsOf(tenantId, row.flag.id), dto.key, row.flag.version);
    return row;
  }

  async update(tenantId: string, env: string | undefined, caller: CallerContext, key: string, dto: UpdateFlagDto, ifMatch?: string): Promise<FlagRow> {
    const environment = await this.environments.resolve(tenantId, env);
    const given = dto as Record<string, unknown>;
    const globalChanged = GLOBAL_FIELDS.filter((f) => f in given && given[f] !== undefined);
    // The DTO instance holds every declared field, undefined when not sent: only what was sent
    // changes (null included, which resets offValue and salt), so a PATCH of rules keeps the off value.
    const envChanged = ENV_FIELDS.filter((f) => given[f] !== undefined);
    const environments = await this.transactions.run(async (m) => {
      const row = await this.repo.lockRow(m, tenantId, key, environment);
      if (!row) throw this.notFound(key);
      if (ifMatch !== undefined && !etagMatches(ifMatch, etagOf(row))) {
        throw new ProblemException(FlagProblems['flag-changed'], `The flag is at version ${etagOf(row)}; read it again and retry.`, { currentVersion: etagOf(row) });
      }
      const flag: FlagEntity = { ...row.flag };
      for (const f of globalChanged) (flag as unknown as Record<string, unknown>)[f] = given[f];
      const env: FlagEnvironmentEntity = { ...row.env };
      for (const f of envChanged) (env as unknown as Record<string, unknown>)[f] = given[f] ?? null;
      if (flag.projectId && flag.projectId !== row.flag.projectId && !(await this.projects.exists(tenantId, flag.projectId))) {
        throw validationProblem({ projectId: 'names no project of this tenant' });
      }
      await this.validate(m, tenantId, flag, env, environment, globalChanged.includes('variations') || globalChanged.includes('defaultValue'));
      const changes: Record<string, { from: unknown; to: unknown }> = {};
      for (const f of globalChanged) changes[f] = { from: (row.flag as unknown as Record<string, unknown>)[f], to: given[f] };
      for (const f of envChanged) changes[f] = { from: (row.env as unknown as Record<string, unknown>)[f], to: given[f] ?? null };
      if (globalChanged.length) {
        const patch: Partial<FlagEntity> = {};
        for (const f of globalChanged) (patch as Record<string, unknown>)[f] = (flag as unknown as Record<string, unknown>)[f];
        await this.repo.updateFlag(m, tenantId, row.flag.id, row.flag.version, patch);
      }
      if (envChanged.length) {
        const patch: Partial<FlagEnvironmentEntity> = {};
        for (const f of envChanged) (patch as Record<string, unknown>)[f] = (env as unknown as Record<string, unknown>)[f];
        await this.repo.updateEnv(m, tenantId, row.flag.id, environment, row.env.version, patch);
      }
      if (globalChanged.length || envChanged.length) {
        await this.boundSize(m, tenantId, [row.flag.id], () => largestField(given, DEFINITION_FIELDS) ?? 'flag');
        await this.repo.audit(m, { tenantId, flagKey: key, environmentKey: envChanged.length ? environment : null, action: 'update', actor: caller.callerId, changes });
      }
      return globalChanged.length ? await this.repo.environmentsOf(tenantId, row.flag.id, m) : envChanged.length ? [environment] : [];
    });
    const updated = await this.get(tenantId, environment, key);
    await this.events.changed(tenantId, environments, key, updated.flag.version);
    return updated;
  }

  /**
   * LaunchDarkly's server-side SDK data into one environment: each flag created, or its variations
   * and this environment's targeting replaced, all in one transaction (a 422 writes nothing), one
   * audit record per flag, then announced like any other change.
   */
  async importLaunchDarkly(tenantId: string, env: string | undefined, caller: CallerContext, body: unknown): Promise<ImportResult> {
    const environment = await this.environments.resolve(tenantId, env);
    const parsed = parseLaunchDarklyData(body);
    for (const key of RESERVED_KEYS) if (parsed.flags.has(key)) parsed.errors[`flags.${key}.key`] = `${key} is reserved by the API's paths`;
    if (Object.keys(parsed.errors).length) throw validationProblem(parsed.errors);
    if (parsed.flags.size > IMPORT_MAX_FLAGS) throw validationProblem({ flags: `at most ${IMPORT_MAX_FLAGS} flags per request` });

    // Set-based: a few statements whatever the number of flags, so the transaction (and the pool
    // connection it holds) lasts milliseconds, not one round trip per flag.
    const written = await this.transactions.run(async (m) => {
      // One import per tenant at a time: a second one is told so at once rather than queueing on
      // the first one's row locks with a pool connection of its own.
      if (!(await this.repo.tryLockImport(m, tenantId))) {
        throw new ProblemException(FlagProblems['import-in-progress'], 'Another import of this tenant is under way; retry when it has finished.', {}, { 'Retry-After': String(IMPORT_RETRY_AFTER_S) });
      }
      // Locked in key order, so concurrent imports and PATCHes queue instead of deadlocking.
      const locked = await this.repo.lockRows(m, tenantId, [...parsed.flags.keys()], environment);
      const current = new Map((await this.repo.definitions(tenantId, environment, m)).map((d) => [d.key, d]));
      const { flags, errors } = mapLaunchDarklyFlags(
        parsed.flags,
        (key) => {
          const found = locked.get(key)?.flag ?? current.get(key);
          return found ? { type: found.type, variations: found.variations } : undefined;
        },
        randomUUID,
      );
      if (Object.keys(errors).length) throw validationProblem(errors);

      // Validated together: prerequisites may name flags of the same import.
      const imported = new Map(flags.map((f) => [f.key, f]));
      const merged = new Map(current);
      const entities = new Map<string, { flag: FlagEntity; env: FlagEnvironmentEntity }>();
      for (const f of flags) {
        const before = locked.get(f.key);
        const flag: FlagEntity = before
          ? { ...before.flag, variations: f.variations }
          : ({ key: f.key, type: f.type, defaultValue: f.defaultValue, variations: f.variations, version: 0 } as FlagEntity);
        const envRow = { ...(before?.env ?? {}), environmentKey: environment, ...importedTargeting(f), version: before?.env.version ?? 0 } as FlagEnvironmentEntity;
        entities.set(f.key, { flag, env: envRow });
        merged.set(f.key, definitionOf(flag, envRow));
      }
      // A flag whose variations change must stay valid in every other environment too.
      const variationsChanged = flags.filter((f) => {
        const before = locked.get(f.key);
        return before !== undefined && !sameVariations(before.flag.variations, f.variations);
      });
      const otherEnvRows = new Map<string, FlagEnvironmentEntity[]>();
      for (const row of await this.repo.envRowsOfMany(m, tenantId, variationsChanged.map((f) => locked.get(f.key)!.flag.id))) {
        if (row.environmentKey === environment) continue;
        otherEnvRows.set(row.flagId, [...(otherEnvRows.get(row.flagId) ?? []), row]);
      }
      for (const f of flags) {
        const { flag, env: envRow } = entities.get(f.key)!;
        const ruleCount = f.rules.length;
        for (const p of validateFlagDefinition(definitionOf(flag, envRow), (k) => merged.get(k))) {
          errors[`flags.${f.key}.${importPath(p.path, ruleCount)}`] = p.message;
        }
        const before = locked.get(f.key);
        if (before && !sameVariations(before.flag.variations, f.variations)) {
          for (const other of (otherEnvRows.get(before.flag.id) ?? []).sort((a, b) => a.environmentKey.localeCompare(b.environmentKey))) {
            for (const p of validateFlagDefinition(definitionOf(flag, other))) errors[`flags.${f.key}.environments.${other.environmentKey}.${p.path}`] = p.message;
          }
        }
      }
      for (const p of prerequisiteBoundProblems(merged, imported.keys())) errors[`flags.${p.key}.prerequisites`] ??= `its prerequisites ${p.message}`;
      if (Object.keys(errors).length) throw validationProblem(errors);

      const fresh = [...imported.values()].filter((f) => !locked.has(f.key));
      // The import's new flags count together: all fit under the quota, or none is written.
      await this.quotas.reserve(m, 'flags-per-tenant', tenantId, fresh.length);
      const ids = await this.repo.insertMany(m, tenantId, fresh);
      await this.repo.updateVariationsMany(
        m,
        tenantId,
        variationsChanged.map((f) => ({ flagId: locked.get(f.key)!.flag.id, expectedVersion: locked.get(f.key)!.flag.version, variations: f.variations })),
      );
      // A new flag's row in this environment was just inserted at version 1.
      await this.repo.replaceTargetingMany(
        m,
        tenantId,
        environment,
        [...imported.values()].map((f) => {
          const before = locked.get(f.key);
          return { flagId: before?.flag.id ?? ids.get(f.key)!, expectedVersion: before?.env.version ?? 1, ...importedTargeting(f) };
        }),
      );
      // Every flag of the import within FLAG_MAX_BYTES and all of them within the byte quota, or nothing is written.
      await this.boundSize(m, tenantId, [...imported.keys()].map((key) => locked.get(key)?.flag.id ?? ids.get(key)!), (d) => `flags.${d.key}`, IMPORT_NAMED_ADDITIONS);
      await this.repo.auditMany(
        m,
        tenantId,
        [...imported.values()].map((f) => ({
          flagKey: f.key,
          environmentKey: environment,
          action: 'import',
          actor: caller.callerId,
          changes: { source: 'launchdarkly', sourceVersion: f.sourceVersion ?? null, created: !locked.has(f.key), variations: f.variations, ...importedTargeting(f) },
        })),
      );
      const created: string[] = [];
      const replaced: string[] = [];
      for (const f of imported.values()) (locked.has(f.key) ? replaced : created).push(f.key);
      return { created, replaced };
    }).catch((err: unknown) => {
      // A flag of the same key created meanwhile (it was not there to lock): nothing was written.
      if (isUniqueViolation(err)) throw new ProblemException(FlagProblems['flag-exists'], 'A flag of this import was created by another request meanwhile; nothing was imported. Retry the import.');
      throw err;
    });

    const rows = await this.repo.findRows(tenantId, [...parsed.flags.keys()], environment);
    const environmentsOf = await this.repo.environmentsOfMany(tenantId, rows.map((r) => r.flag.id));
    await this.events.changedMany(tenantId, rows.map((r) => ({ environments: environmentsOf.get(r.flag.id) ?? [], flagKey: r.flag.key, version: r.flag.version })));
    return { environment, ...written, skipped: parsed.skipped, rows };
  }

  async remove(tenantId: string, caller: CallerContext, key: string): Promise<void> {
    const environments = await this.transactions.run(async (m) => {
      const flag = await this.repo.findByKey(tenantId, key, m);
      if (!flag) throw this.notFound(key);
      const dependents = await this.repo.dependents(tenantId, key, m);
      if (dependents.length) {
        throw new ProblemException(FlagProblems['flag-in-use'], `Flags ${dependents.join(', ')} name ${key} as a prerequisite; remove that first.`, { dependents });
      }
      const envs = await this.repo.environmentsOf(tenantId, flag.id, m);
      await this.repo.delete(m, tenantId, flag.id);
      await this.repo.audit(m, { tenantId, flagKey: key, environmentKey: null, action: 'delete', actor: caller.callerId, changes: {} });
      return envs;
    });
    await this.events.changed(tenantId, environments, key, 0);
  }

  async variations(tenantId: string, key: string): Promise<Variation[]> {
    const flag = await this.repo.findByKey(tenantId, key);
    if (!flag) throw this.notFound(key);
    return flag.variations.map((v) => ({ id: v.id, name: v.name, value: v.value, description: v.description ?? '', weight: v.weight }));
  }

  /**
   * Evaluates from the tenant-environment's compiled set held in memory (FlagStore): no query
   * per call once warm. A held set also proves the environment exists, so it is not looked up again.
   */
  async evaluate(tenantId: string, env: string | undefined, key: string, context: EvaluationContext, projectId?: string): Promise<EvaluationResultDto> {
    const environment = env === undefined || env === '' ? 'production' : env;
    const view = this.store.peek(tenantId, environment) ?? (await this.store.view(tenantId, await this.environments.resolve(tenantId, env)));
    const flag = view.set.get(key);
    if (!flag) {
      const bytes = view.refused.get(key);
      if (bytes === undefined || (projectId !== undefined && view.projects.get(key) !== projectId)) throw this.notFound(key);
      throw new ProblemException(
        FlagProblems['flag-too-large'],
        `Flag ${key}'s definition in ${environment} takes ${bytes} bytes, over the ${this.maxFlagBytes} a flag may take; it is not evaluated until it is made smaller.`,
        { bytes, limit: this.maxFlagBytes },
      );
    }
    const result = view.set.evaluate(flag, context);
    if (projectId !== undefined && view.projects.get(key) !== projectId) throw this.notFound(key);
    this.counter.count(tenantId, key);
    return toEvaluationDto(key, result);
  }

  /** The flag file orep-server serves: the flags as the store serves them (bounded alike, so the file loads there too), by key. */
  async export(tenantId: string, env: string | undefined) {
    const environment = await this.environments.resolve(tenantId, env);
    const flags = (await this.store.served(tenantId, environment)).map((f) => f.definition).sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    return { version: FLAG_FILE_VERSION, tenantId, environment, generatedAt: new Date().toISOString(), flags };
  }

  auditTrail(tenantId: string, key: string) {
    return this.repo.auditTrail(tenantId, key);
  }

  private buildVariations(dto: CreateFlagDto, errors: Record<string, string>): Variation[] {
    if (dto.flag_variations?.length) {
      return dto.flag_variations.map((v, i) => {
        if (!valueMatchesType(dto.type, v.value)) errors[`flag_variations[${i}].value`] = `must be ${typeName(dto.type)}`;
        return { id: randomUUID(), name: v.name, value: v.value, description: v.description ?? '', weight: v.weight ?? 0 };
      });
    }
    if (dto.type === 'boolean') {
      return [
        { id: randomUUID(), name: 'true', value: true, description: '', weight: 0 },
        { id: randomUUID(), name: 'false', value: false, description: '', weight: 0 },
      ];
    }
    return [{ id: randomUUID(), name: 'default', value: dto.defaultValue as JsonValue, description: '', weight: 0 }];
  }

  /**
   * The edited flag must be a valid flag in this environment (prerequisites resolved against the
   * tenant's other flags) and, when variations or the default changed, in every other one too.
   */
  private async validate(m: Tx, tenantId: string, flag: FlagEntity, env: FlagEnvironmentEntity, environment: string, allEnvironments: boolean): Promise<void> {
    const errors: Record<string, string> = {};
    if (!valueMatchesType(flag.type, flag.defaultValue)) errors['defaultValue'] = `must be ${typeName(flag.type)}`;
    const others = new Map((await this.repo.definitions(tenantId, environment, m)).map((d) => [d.key, d]));
    const def = definitionOf(flag, env);
    const prerequisitesChanged = JSON.stringify(others.get(def.key)?.prerequisites ?? []) !== JSON.stringify(def.prerequisites ?? []);
    others.set(def.key, def);
    for (const p of validateFlagDefinition(def, (k) => others.get(k))) errors[p.path || 'flag'] = p.message;
    // New prerequisites deepen the flags above this one too; the validator saw only the chains below it.
    for (const p of prerequisitesChanged ? prerequisiteBoundProblems(others, [def.key]) : []) {
      if (p.key !== def.key) errors['prerequisites'] ??= `flag '${p.key}' depends on this one, and its prerequisites would ${p.message}`;
    }
    if (allEnvironments) {
      for (const other of await this.repo.envRows(m, tenantId, flag.id)) {
        if (other.environmentKey === environment) continue;
        for (const p of validateFlagDefinition(definitionOf(flag, other))) errors[`environments.${other.environmentKey}.${p.path}`] = p.message;
      }
    }
    if (Object.keys(errors).length) throw validationProblem(errors);
  }

  /**
   * Measures the definitions this write left (every environment of these flags), refuses one it
   * grew past FLAG_MAX_BYTES (422 at `errorKey`), then counts what it added against the tenant's
   * byte quota (409, naming the `named` flags that add most, for a write of many). Inside the
   * write's transaction: a refusal writes nothing.
   */
  private async boundSize(m: Tx, tenantId: string, flagIds: string[], errorKey: (d: MeasuredDefinition) => string, named = 0): Promise<void> {
    const measured = await this.repo.measure(m, tenantId, flagIds);
    const over = oversized(measured, this.maxFlagBytes);
    if (over.length > 0) throw validationProblem(sizeErrors(over, this.maxFlagBytes, errorKey));
    await this.quotas.reserve(m, 'flag-bytes-per-tenant', tenantId, addedBytes(measured), { written: true, ...(named > 0 ? { adds: largestAdditions(measured, named) } : {}) });
  }

  private notFound(key: string): ProblemException {
    return new ProblemException(FlagProblems['flag-not-found'], `No flag ${key} in this tenant.`);
  }
}

/** An import is bounded so that one transaction (and the locks it holds) stays short. */
const IMPORT_MAX_FLAGS = 2000;
/** An import refused by the byte quota names this many of the flags that add most to it. */
const IMPORT_NAMED_ADDITIONS = 10;
/** An import of the largest size takes well under a second. */
const IMPORT_RETRY_AFTER_S = 2;

function importedTargeting(f: ImportedFlag): Pick<FlagEnvironmentEntity, 'enabled' | 'offValue' | 'targets' | 'rules' | 'prerequisites' | 'salt'> {
  return { enabled: f.enabled, offValue: f.offValue, targets: f.targets, rules: f.rules, prerequisites: f.prerequisites, salt: f.salt };
}

function sameVariations(a: Variation[], b: Variation[]): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** Our validator's path of an imported flag in LaunchDarkly's terms: the last rule is its fallthrough. */
function importPath(path: string, ruleCount: number): string {
  const last = `rules[${ruleCount - 1}]`;
  return path.startsWith(last) ? `fallthrough${path.slice(last.length)}` : path;
}

function definitionOf(flag: FlagEntity, env: FlagEnvironmentEntity): FlagDefinition {
  return flagDefinitionFromRow({
    key: flag.key,
    type: flag.type,
    default_value: flag.defaultValue,
    variations: flag.variations,
    flag_version: flag.version,
    enabled: env.enabled,
    off_value: env.offValue,
    targets: env.targets,
    rules: env.rules,
    prerequisites: env.prerequisites,
    salt: env.salt,
    env_version: env.version,
  });
}

/** RFC 9110 If-Match: `*`, or a list of (strong) entity tags. */
function etagMatches(header: string, current: string): boolean {
  if (header.trim() === '*') return true;
  return header.split(',').some((t) => t.trim().replace(/^W\//, '') === current);
}
