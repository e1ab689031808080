import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG } from '@flagship/config';
import { FlagStore } from '@flagship/flag-store';
import { afterCommit, isUniqueViolation, TransactionRunner, type Tx } from '@flagship/persistence';
import { ProblemException, validationProblem } from '@flagship/problem-details';
import { type CallerContext, decodeCursor } from '@flagship/service-kit';
import { EnvironmentsService } from '../environments/environments.service';
import { ProjectsService } from '../projects/projects.service';
import { DomainEvents } from '../webhooks/domain-events';
import { SegmentsRepository } from '../segments/segments.repository';
import type { ManagementApiConfig } from '../env.schema';
import { FlagEvents } from './flag-events';
import { type FlagLifecycle, lifecycleFilter } from './flag-lifecycle';
import { FlagLimits } from './flag-limits';
import { approvalNeeded, deleteNeedsApproval } from '../flag-changes/flag-change-rules';
import { applyPatch, changesGlobals, changesTargeting, type FlagPatch } from './flag-patch';
import { DEFINITION_FIELDS, flagProblems, inUse, newFlagProblems, newFlagsProblems, newFlagVariations, segmentLookupOf, staleWrite } from './flag-rules';
import { largestField } from './flag-size';
import type { FlagEntity } from './flag.entity';
import { toFlagFileDto, toVariationDto } from './flag.mapper';
import type { FlagExportDto } from './flag-targeting.dto';
import type { CreateFlagDto, FlagVariationDto, UpdateFlagDto } from './flags.dto';
import { approvalRequired, flagNotFound, FlagProblems } from './flags.errors';
import { type AuditRecord, type FlagRow, FlagsRepository, type FlagTargetingFields } from './flags.repository';

/** A flag createWithin writes, with its targeting (the same in every environment of the tenant). */
export interface SeededFlag extends Pick<FlagEntity, 'key' | 'name' | 'type' | 'defaultValue' | 'description' | 'tags' | 'projectId' | 'variations'> {
  targeting: Pick<FlagTargetingFields, 'enabled' | 'targets' | 'rules' | 'prerequisites'>;
}

/**
 * Flags: global fields plus per-environment targeting (CONTRACT.md section 5). Every change is held
 * to the rules (flag-rules), written with an audit record within the limits (FlagLimits), and
 * announced once committed. The LaunchDarkly import is FlagImportService's; evaluation is evaluate/'s.
 */
@Injectable()
export class FlagsService {
  constructor(
    @Inject(TransactionRunner) private readonly transactions: Pick<TransactionRunner, 'run'>,
    private readonly repo: FlagsRepository,
    @Inject(ProjectsService) private readonly projects: Pick<ProjectsService, 'found' | 'exists'>,
    @Inject(EnvironmentsService) private readonly environments: Pick<EnvironmentsService, 'resolve' | 'approvalRequired'>,
    @Inject(FlagStore) private readonly store: Pick<FlagStore, 'served' | 'servedSegments'>,
    @Inject(FlagEvents) private readonly events: Pick<FlagEvents, 'changed'>,
    private readonly limits: FlagLimits,
    /** The environment's segments, which a flag's segmentMatch clauses must name (read in the write's transaction). */
    @Inject(SegmentsRepository) private readonly segments: Pick<SegmentsRepository, 'definitions'>,
    /** Webhooks hear every committed change: recorded in the change's transaction. */
    @Inject(DomainEvents) private readonly domainEvents: Pick<DomainEvents, 'record'>,
    @Inject(APP_CONFIG) private readonly config: Pick<ManagementApiConfig, 'STALE_AFTER_DAYS'>,
  ) {}

  /** The clock the lifecycle filter counts days on (a unit spec sets its fake's). */
  now: () => Date = () => new Date();

  /** A page of flags; `filter.lifecycle` keeps the stale (or active) ones, over `staleAfterDays` or STALE_AFTER_DAYS. */
  async list(tenantId: string, env: string | undefined, limit: number, cursor?: string, projectId?: string, filter: { lifecycle?: FlagLifecycle; staleAfterDays?: number } = {}): Promise<FlagRow[]> {
    const lifecycle = lifecycleFilter(filter.lifecycle, filter.staleAfterDays, this.config.STALE_AFTER_DAYS, this.now());
    return this.repo.list(tenantId, await this.environments.resolve(tenantId, env), limit, decodeCursor(cursor), projectId, lifecycle);
  }

  async get(tenantId: string, env: string | undefined, key: string): Promise<FlagRow> {
    const row = await this.repo.findRow(tenantId, key, await this.environments.resolve(tenantId, env));
    if (!row) throw flagNotFound(key);
    return row;
  }

  async create(tenantId: string, env: string | undefined, caller: CallerContext, dto: CreateFlagDto, projectIdFromPath?: string): Promise<FlagRow> {
    const environment = await this.environments.resolve(tenantId, env);
    const errors = newFlagProblems(dto, dto.flag_variations ?? [], 'flag_variations');
    const projectId = projectIdFromPath ?? dto.projectId ?? null;
    if (projectIdFromPath) await this.projects.found(tenantId, projectIdFromPath);
    else if (projectId && !(await this.projects.exists(tenantId, projectId))) errors['projectId'] = 'names no project of this tenant';
    if (Object.keys(errors).length) throw validationProblem(errors);
    const variations = newFlagVariations(dto, dto.flag_variations, randomUUID);
    try {
      await this.transactions.run(async (m) => {
        await this.limits.reserveFlags(m, tenantId);
        const flag = await this.repo.insert(
          m,
          tenantId,
          { key: dto.key, projectId, name: dto.name, type: dto.type, defaultValue: dto.defaultValue, description: dto.description ?? '', tags: dto.tags ?? [], variations, clientSideAvailability: dto.clientSideAvailability },
          dto.enabled ? environment : undefined,
        );
        await this.limits.boundSize(m, tenantId, [flag.id], () => largestField(dto, DEFINITION_FIELDS) ?? 'defaultValue');
        await this.repo.audit(m, { tenantId, flagKey: dto.key, environmentKey: null, action: 'create', actor: caller.callerId, changes: { ...dto } });
        await this.domainEvents.record(m, tenantId, { type: 'flag.created', data: { flagKey: dto.key, environment: dto.enabled ? environment : null, actor: caller.callerId, changes: { ...dto } } });
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw new ProblemException(FlagProblems['flag-exists'], `A flag with key ${dto.key} exists in this tenant.`);
      throw err;
    }
    const row = await this.get(tenantId, environment, dto.key);
    await this.events.changed(tenantId, await this.repo.environmentsOf(tenantId, row.flag.id), dto.key, row.flag.version);
    return row;
  }

  /** A direct change (PATCH): refused (409 approval-required) where it needs a change request. */
  async update(tenantId: string, env: string | undefined, caller: CallerContext, key: string, dto: UpdateFlagDto, ifMatch?: string): Promise<FlagRow> {
    const environment = await this.environments.resolve(tenantId, env);
    await this.transactions.run(async (m) => {
      const needs = approvalNeeded(dto, environment, await this.environments.approvalRequired(tenantId, m));
      if (needs) throw approvalRequired(needs);
      const refusal = await this.applyWithin(m, tenantId, environment, caller.callerId, key, dto, (row) => staleWrite(ifMatch, row));
      if (refusal) throw refusal;
    });
    return this.get(tenantId, environment, key);
  }

  /**
   * A patch written in the caller's transaction as `actor` (a direct PATCH's caller, a change
   * request's author, a schedule's author), held to every rule of PATCH but approval (the caller's
   * to decide), and announced once the transaction commits. `guard` sees the locked row first: a
   * refusal it answers is returned, nothing written (so the caller may record it and commit).
   */
  async applyWithin(
    m: Tx,
    tenantId: string,
    environment: string,
    actor: string,
    key: string,
    dto: FlagPatch,
    guard: (row: FlagRow) => ProblemException | undefined = () => undefined,
  ): Promise<ProblemException | undefined> {
    const row = await this.lockWithin(m, tenantId, environment, key);
    const refusal = guard(row);
    if (refusal) return refusal;
    const patch = applyPatch(row, dto);
    if (patch.flag.projectId && patch.flag.projectId !== row.flag.projectId && !(await this.projects.exists(tenantId, patch.flag.projectId))) {
      throw validationProblem({ projectId: 'names no project of this tenant' });
    }
    // Variations and the default are the flag's in every environment: each must stay valid with them.
    const everywhere = 'variations' in patch.global || 'defaultValue' in patch.global;
    const current = await this.repo.definitions(tenantId, environment, m);
    const otherEnvironments = everywhere ? await this.repo.envRows(m, tenantId, row.flag.id) : undefined;
    const errors = flagProblems(patch.flag, patch.env, environment, current, otherEnvironments, segmentLookupOf(await this.segments.definitions(tenantId, environment, m)));
    if (Object.keys(errors).length) throw validationProblem(errors);
    const globals = changesGlobals(patch);
    const targeting = changesTargeting(patch);
    if (globals) await this.repo.updateFlag(m, tenantId, row.flag.id, row.flag.version, patch.global);
    if (targeting) await this.repo.updateEnv(m, tenantId, row.flag.id, environment, row.env.version, patch.targeting);
    if (globals || targeting) {
      await this.limits.boundSize(m, tenantId, [row.flag.id], () => largestField(dto, DEFINITION_FIELDS) ?? 'flag');
      await this.repo.audit(m, { tenantId, flagKey: key, environmentKey: targeting ? environment : null, action: 'update', actor, changes: patch.changes });
      // PATCH, an applied change request and a schedule all write here, so webhooks hear each once.
      await this.domainEvents.record(m, tenantId, { type: 'flag.updated', data: { flagKey: key, environment: targeting ? environment : null, actor, changes: patch.changes } });
    }
    const environments = globals ? await this.repo.environmentsOf(tenantId, row.flag.id, m) : targeting ? [environment] : [];
    const version = row.flag.version + (globals ? 1 : 0);
    afterCommit(m, () => this.events.changed(tenantId, environments, key, version));
    return undefined;
  }

  /** The flag as seen in `environment`, locked until the transaction ends (so its writers queue); 404 when missing. */
  async lockWithin(m: Tx, tenantId: string, environment: string, key: string): Promise<FlagRow> {
    const row = await this.repo.lockRow(m, tenantId, key, environment);
    if (!row) throw flagNotFound(key);
    return row;
  }

  /** An audit record of the flag written in the caller's transaction (a change request's or a schedule's step). */
  auditWithin(m: Tx, tenantId: string, record: AuditRecord): Promise<void> {
    return this.repo.audit(m, { tenantId, ...record });
  }

  async remove(tenantId: string, caller: CallerContext, key: string): Promise<void> {
    const environments = await this.transactions.run(async (m) => {
      const flag = await this.repo.findByKey(tenantId, key, m);
      if (!flag) throw flagNotFound(key);
      const refusal = inUse(key, await this.repo.dependents(tenantId, key, m));
      if (refusal) throw refusal;
      const approvals = await this.environments.approvalRequired(tenantId, m);
      if (approvals.length > 0) {
        const enabledIn = (await this.repo.envRows(m, tenantId, flag.id)).filter((e) => e.enabled).map((e) => e.environmentKey);
        const needs = deleteNeedsApproval(enabledIn, approvals);
        if (needs) throw approvalRequired(needs);
      }
      const envs = await this.repo.environmentsOf(tenantId, flag.id, m);
      await this.repo.delete(m, tenantId, flag.id);
      await this.repo.audit(m, { tenantId, flagKey: key, environmentKey: null, action: 'delete', actor: caller.callerId, changes: {} });
      await this.domainEvents.record(m, tenantId, { type: 'flag.deleted', data: { flagKey: key, actor: caller.callerId } });
      return envs;
    });
    await this.events.changed(tenantId, environments, key, 0);
  }

  /**
   * Flags written inside the caller's own transaction (a sandbox's demo flags, written with the
   * tenant that holds them; `projectId` is the caller's, made in that transaction): held to the
   * rules, limits and audit of every write, and announced once that transaction commits.
   */
  async createWithin(m: Tx, tenantId: string, actor: string, flags: readonly SeededFlag[]): Promise<void> {
    const errors: Record<string, string> = {};
    for (const f of flags) for (const [path, message] of Object.entries(newFlagProblems(f, f.variations, 'variations'))) errors[`${f.key}.${path}`] = message;
    if (Object.keys(errors).length) throw validationProblem(errors);
    await this.limits.reserveFlags(m, tenantId, flags.length);
    const written: FlagEntity[] = [];
    for (const { targeting: _targeting, ...fields } of flags) written.push(await this.repo.insert(m, tenantId, fields));
    const environments = written.length > 0 ? await this.repo.environmentsOf(tenantId, written[0]!.id, m) : [];
    for (const environment of environments) {
      for (const [i, f] of flags.entries()) await this.repo.updateEnv(m, tenantId, written[i]!.id, environment, written[i]!.version, f.targeting);
      const definitions = new Map((await this.repo.definitions(tenantId, environment, m)).map((d) => [d.key, d]));
      const segments = segmentLookupOf(await this.segments.definitions(tenantId, environment, m));
      for (const [path, message] of Object.entries(newFlagsProblems(definitions, flags.map((f) => f.key), segments))) errors[`environments.${environment}.${path}`] = message;
    }
    if (Object.keys(errors).length) throw validationProblem(errors);
    await this.limits.boundSize(m, tenantId, written.map((f) => f.id), (d) => d.key);
    await this.repo.auditMany(m, tenantId, flags.map((f) => ({ flagKey: f.key, environmentKey: null, action: 'create', actor, changes: { ...f } })));
    await this.domainEvents.record(m, tenantId, ...flags.map((f) => ({ type: 'flag.created' as const, data: { flagKey: f.key, environment: null, actor, changes: { ...f } } })));
    afterCommit(m, async () => {
      for (const f of written) await this.events.changed(tenantId, environments, f.key, f.version);
    });
  }

  /** Which of these keys name flags of the tenant in `environment`, in the order given. */
  async present(tenantId: string, keys: readonly string[], environment: string): Promise<string[]> {
    return (await this.repo.findRows(tenantId, keys, environment)).map((r) => r.flag.key);
  }

  async variations(tenantId: string, key: string): Promise<FlagVariationDto[]> {
    const flag = await this.repo.findByKey(tenantId, key);
    if (!flag) throw flagNotFound(key);
    return flag.variations.map(toVariationDto);
  }

  /** The flag file orep-server serves: the flags as the store serves them (bounded alike, so the file loads there too), and the segments they may use. */
  async export(tenantId: string, env: string | undefined): Promise<FlagExportDto> {
    const environment = await this.environments.resolve(tenantId, env);
    const flags = (await this.store.served(tenantId, environment)).map((f) => f.definition);
    return toFlagFileDto(tenantId, environment, flags, await this.store.servedSegments(tenantId, environment), new Date());
  }

  auditTrail(tenantId: string, key: string) {
    return this.repo.auditTrail(tenantId, key);
  }
}
