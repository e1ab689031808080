import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG } from '@flagship/config';
import { FLAG_KEY_PATTERN } from '@flagship/domain';
import { checkSegmentDefinition, type SegmentDefinition, type ValidationProblem } from '@flagship/flag-evaluation';
import { afterCommit, isUniqueViolation, TransactionRunner, type Tx } from '@flagship/persistence';
import { ProblemException, validationProblem } from '@flagship/problem-details';
import { type CallerContext, decodeCursor } from '@flagship/service-kit';
import type { ManagementApiConfig } from '../env.schema';
import { EnvironmentsService } from '../environments/environments.service';
import { DomainEvents } from '../webhooks/domain-events';
import { FlagEvents } from '../flags/flag-events';
import { type SegmentLookup, segmentLookupOf } from '../flags/flag-rules';
import { Quotas } from '../quotas/quotas';
import { listedKeys, type SegmentBounds, segmentBodyOf, segmentInUse, segmentProblems, staleSegmentWrite } from './segment-rules';
import type { CreateSegmentDto, UpdateSegmentDto } from './segments.dto';
import { SegmentProblems, segmentNotFound } from './segments.errors';
import { type NewSegmentFields, type SegmentAuditRow, segmentDefinitionOf, type SegmentRow, SegmentsRepository } from './segments.repository';

/** A segment as a read or write answers it: the row and what its check warns of. */
export interface SegmentView {
  row: SegmentRow;
  warnings: ValidationProblem[];
}

export type SegmentLimitSettings = Pick<ManagementApiConfig, 'SEGMENT_MAX_BYTES' | 'SEGMENT_MAX_KEYS'>;

/**
 * Segments per tenant and environment (CONTRACT.md section 10, LaunchDarkly's semantics): every
 * write held to the rules (segment-rules), within the quotas (a count and bytes per tenant), audited,
 * and announced once committed on the flags' change feed, so flag stores re-read the environment.
 */
@Injectable()
export class SegmentsService {
  private readonly bounds: SegmentBounds;

  constructor(
    @Inject(TransactionRunner) private readonly transactions: Pick<TransactionRunner, 'run'>,
    private readonly repo: SegmentsRepository,
    @Inject(EnvironmentsService) private readonly environments: Pick<EnvironmentsService, 'resolve'>,
    @Inject(Quotas) private readonly quotas: Pick<Quotas, 'reserve'>,
    @Inject(FlagEvents) private readonly events: Pick<FlagEvents, 'segmentChanged'>,
    @Inject(APP_CONFIG) config: SegmentLimitSettings,
    /** Webhooks hear every committed change: recorded in the change's transaction. */
    @Inject(DomainEvents) private readonly domainEvents: Pick<DomainEvents, 'record'>,
  ) {
    this.bounds = { maxBytes: config.SEGMENT_MAX_BYTES, maxKeys: config.SEGMENT_MAX_KEYS };
  }

  async list(tenantId: string, env: string | undefined, limit: number, cursor?: string): Promise<SegmentView[]> {
    const rows = await this.repo.list(tenantId, await this.environments.resolve(tenantId, env), limit, decodeCursor(cursor));
    return rows.map(viewOf);
  }

  async get(tenantId: string, env: string | undefined, key: string): Promise<SegmentView> {
    const environment = await this.environments.resolve(tenantId, env);
    const row = await this.repo.find(tenantId, environment, key);
    if (!row) throw segmentNotFound(key, environment);
    return viewOf(row);
  }

  async create(tenantId: string, env: string | undefined, caller: CallerContext, dto: CreateSegmentDto): Promise<SegmentView> {
    const environment = await this.environments.resolve(tenantId, env);
    const definition = segmentBodyOf(dto);
    const segment: SegmentDefinition = { key: dto.key, name: dto.name, ...definition };
    const { errors, bytes } = segmentProblems(segment, dto, this.bounds, undefined, await this.lookup(tenantId, environment));
    if (Object.keys(errors).length > 0) throw validationProblem(errors);
    let row: SegmentRow;
    try {
      row = await this.transactions.run(async (m) => {
        await this.quotas.reserve(m, 'segments-per-tenant', tenantId);
        const inserted = await this.repo.insert(m, tenantId, environment, { key: dto.key, name: dto.name, description: dto.description ?? '', definition, definitionBytes: bytes });
        await this.quotas.reserve(m, 'segment-bytes-per-tenant', tenantId, bytes, { written: true });
        await this.repo.audit(m, tenantId, { environment, segmentKey: dto.key, action: 'create', actor: caller.callerId, changes: { ...dto } });
        await this.domainEvents.record(m, tenantId, { type: 'segment.updated', data: { segmentKey: dto.key, environment, action: 'create', actor: caller.callerId, changes: { ...dto } } });
        return inserted;
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw new ProblemException(SegmentProblems['segment-exists'], `A segment with key ${dto.key} exists in environment ${environment} of this tenant.`);
      throw err;
    }
    await this.events.segmentChanged(tenantId, environment, row.key, row.version);
    return viewOf(row);
  }

  /** PATCH: the fields sent replace the stored ones (lists whole); `salt: null` resets it to the key. If-Match is optional, as for flags. */
  async update(tenantId: string, env: string | undefined, caller: CallerContext, key: string, dto: UpdateSegmentDto, ifMatch?: string): Promise<SegmentView> {
    const environment = await this.environments.resolve(tenantId, env);
    const written = await this.transactions.run(async (m) => {
      const row = await this.repo.lock(m, tenantId, environment, key);
      if (!row) throw segmentNotFound(key, environment);
      const stale = staleSegmentWrite(ifMatch, row);
      if (stale) throw stale;
      const changed = Object.keys(dto).filter((f) => dto[f as keyof UpdateSegmentDto] !== undefined);
      if (changed.length === 0) return undefined;
      const name = dto.name ?? row.name;
      const definition = segmentBodyOf(dto, row.definition);
      const before = { keys: listedKeys(row.definition).count, bytes: row.definitionBytes };
      const { errors, bytes } = segmentProblems({ key, name, ...definition }, dto, this.bounds, before, await this.lookup(tenantId, environment, m));
      if (Object.keys(errors).length > 0) throw validationProblem(errors);
      await this.repo.update(m, tenantId, environment, key, row.version, { name, description: dto.description ?? row.description, definition, definitionBytes: bytes });
      await this.quotas.reserve(m, 'segment-bytes-per-tenant', tenantId, bytes - row.definitionBytes, { written: true });
      const changes: Record<string, unknown> = {};
      for (const f of changed) changes[f] = { from: f === 'name' || f === 'description' ? row[f] : (row.definition as unknown as Record<string, unknown>)[f], to: dto[f as keyof UpdateSegmentDto] };
      await this.repo.audit(m, tenantId, { environment, segmentKey: key, action: 'update', actor: caller.callerId, changes });
      await this.domainEvents.record(m, tenantId, { type: 'segment.updated', data: { segmentKey: key, environment, action: 'update', actor: caller.callerId, changes } });
      return (await this.repo.find(tenantId, environment, key, m))!;
    });
    if (written === undefined) return this.get(tenantId, environment, key);
    await this.events.segmentChanged(tenantId, environment, key, written.version);
    return viewOf(written);
  }

  /** Refused (409) while a flag or another segment of the environment names it through segmentMatch. */
  async remove(tenantId: string, env: string | undefined, caller: CallerContext, key: string): Promise<void> {
    const environment = await this.environments.resolve(tenantId, env);
    await this.transactions.run(async (m) => {
      const row = await this.repo.lock(m, tenantId, environment, key);
      if (!row) throw segmentNotFound(key, environment);
      const refusal = segmentInUse(key, await this.repo.flagsUsing(tenantId, environment, key, m), await this.repo.segmentsUsing(tenantId, environment, key, m));
      if (refusal) throw refusal;
      await this.repo.delete(m, tenantId, environment, key);
      await this.repo.audit(m, tenantId, { environment, segmentKey: key, action: 'delete', actor: caller.callerId, changes: {} });
      await this.domainEvents.record(m, tenantId, { type: 'segment.updated', data: { segmentKey: key, environment, action: 'delete', actor: caller.callerId, changes: {} } });
    });
    await this.events.segmentChanged(tenantId, environment, key, 0);
  }

  async auditTrail(tenantId: string, env: string | undefined, key: string): Promise<SegmentAuditRow[]> {
    return this.repo.auditTrail(tenantId, await this.environments.resolve(tenantId, env), key);
  }

  /**
   * LaunchDarkly's segments of an import (`POST /api/flags/import`, converted to our shape), written
   * inside the import's transaction so that flags and segments land together or not at all: each
   * created, or replaced by key in `environment`. Held to the rules and bounds of every write (errors
   * keyed `segments.<key>.<path>`), the new ones counted together against the quota and the bytes
   * added against the byte quota (its refusal names the ten that add most), audited as `import`,
   * announced once the transaction commits. A few statements whatever the number of segments.
   */
  async importWithin(m: Tx, tenantId: string, environment: string, actor: string, segments: readonly SegmentDefinition[]): Promise<{ created: string[]; replaced: string[] }> {
    const keys = segments.map((s) => s.key);
    const locked = await this.repo.lockMany(m, tenantId, environment, keys);
    const errors: Record<string, string> = {};
    const written: NewSegmentFields[] = [];
    const adds: Record<string, number> = {};
    let added = 0;
    const seen = new Set<string>();
    for (const { key, name, description, version: _version, ...sent } of segments) {
      if (seen.has(key)) errors[`segments.${key}`] = 'appears more than once in the import';
      seen.add(key);
      if (!FLAG_KEY_PATTERN.test(key)) errors[`segments.${key}.key`] = 'must start with a letter or digit and hold at most 128 letters, digits, dots, dashes or underscores';
      const before = locked.get(key);
      const definition = segmentBodyOf(sent);
      const checked = segmentProblems({ key, name, ...definition }, sent, this.bounds, before && { keys: listedKeys(before.definition).count, bytes: before.definitionBytes });
      for (const [path, message] of Object.entries(checked.errors)) errors[`segments.${key}.${path}`] = message;
      written.push({ key, name, description: description ?? '', definition, definitionBytes: checked.bytes });
      const delta = checked.bytes - (before?.definitionBytes ?? 0);
      added += delta;
      if (delta > 0) adds[key] = delta;
    }
    if (Object.keys(errors).length > 0) throw validationProblem(errors);
    const created = keys.filter((k) => !locked.has(k));
    await this.quotas.reserve(m, 'segments-per-tenant', tenantId, created.length);
    await this.repo.upsertMany(m, tenantId, environment, written);
    const largest = Object.fromEntries(Object.entries(adds).sort((a, b) => b[1] - a[1]).slice(0, 10));
    await this.quotas.reserve(m, 'segment-bytes-per-tenant', tenantId, added, { written: true, adds: largest });
    await this.repo.auditMany(m, tenantId, written.map((f) => ({ environment, segmentKey: f.key, action: 'import', actor, changes: { name: f.name, ...f.definition } })));
    await this.domainEvents.record(m, tenantId, ...written.map((f) => ({ type: 'segment.updated' as const, data: { segmentKey: f.key, environment, action: 'import', actor, changes: { name: f.name, ...f.definition } } })));
    afterCommit(m, async () => {
      for (const f of written) await this.events.segmentChanged(tenantId, environment, f.key, (locked.get(f.key)?.version ?? 0) + 1);
    });
    return { created, replaced: keys.filter((k) => locked.has(k)) };
  }

  /**
   * The environment's segments by key, for the check of a segment's segmentMatch clauses (a missing
   * segment or a cycle is refused at write, not found at evaluation). Read in the update's
   * transaction, after its row lock; two writes closing a cycle at the same moment can still both
   * pass, and the evaluator bounds such a cycle at evaluation (MALFORMED_FLAG) as LaunchDarkly does.
   */
  private async lookup(tenantId: string, environment: string, m?: Tx): Promise<SegmentLookup> {
    return segmentLookupOf(await this.repo.definitions(tenantId, environment, m));
  }

  /**
   * Of `keys`, those stored in the environment, locked until the transaction ends: what an import's
   * flags may name besides its own segments, kept from being deleted until they are written.
   */
  async lockStored(m: Tx, tenantId: string, environment: string, keys: readonly string[]): Promise<Set<string>> {
    return new Set((await this.repo.lockMany(m, tenantId, environment, keys)).keys());
  }

  /** Every segment of the environment in the evaluator's shape (what a flag set is compiled with). */
  async definitions(tenantId: string, environment: string): Promise<SegmentDefinition[]> {
    return this.repo.definitions(tenantId, environment);
  }
}

const viewOf = (row: SegmentRow): SegmentView => ({ row, warnings: checkSegmentDefinition(segmentDefinitionOf(row)).warnings });
