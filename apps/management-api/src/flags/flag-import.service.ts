import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { isUniqueViolation, TransactionRunner } from '@flagship/persistence';
import { ProblemException, validationProblem } from '@flagship/problem-details';
import type { CallerContext } from '@flagship/service-kit';
import { EnvironmentsService } from '../environments/environments.service';
import { importNeedsApproval } from '../flag-changes/flag-change-rules';
import { DomainEvents } from '../webhooks/domain-events';
import { FlagEvents } from './flag-events';
import { FlagLimits } from './flag-limits';
import { globalsChange, IMPORT_MAX_FLAGS, importedRows, importedTargeting, importProblems, importRequestProblems, variationsChange } from './flag-rules';
import type { FlagEnvironmentEntity } from './flag.entity';
import type { ImportResult } from './flag.mapper';
import { approvalRequired, FlagProblems } from './flags.errors';
import { FlagsRepository } from './flags.repository';
import { SegmentsService } from '../segments/segments.service';
import { mapLaunchDarklyFlags, mapLaunchDarklySegments, parseLaunchDarklyData, segmentKeysNamed } from './launchdarkly-import';

/** An import refused by the byte quota names this many of the flags that add most to it. */
const IMPORT_NAMED_ADDITIONS = 10;
/** An import of the largest size takes well under a second. */
const IMPORT_RETRY_AFTER_S = 2;

/**
 * LaunchDarkly's server-side SDK data into one environment: its segments and flags, each created
 * or replaced (a flag's variations and this environment's targeting), all in one transaction (a
 * refusal writes nothing: a 422, a count or byte quota of flags or of segments), one audit record
 * per flag and per segment, then announced.
 */
@Injectable()
export class FlagImportService {
  constructor(
    @Inject(TransactionRunner) private readonly transactions: Pick<TransactionRunner, 'run'>,
    private readonly repo: FlagsRepository,
    @Inject(EnvironmentsService) private readonly environments: Pick<EnvironmentsService, 'resolve' | 'approvalRequired'>,
    @Inject(FlagEvents) private readonly events: Pick<FlagEvents, 'changedMany'>,
    private readonly limits: FlagLimits,
    @Inject(SegmentsService) private readonly segments: Pick<SegmentsService, 'importWithin' | 'lockStored'>,
    /** Webhooks hear every committed change: recorded in the import's transaction. */
    @Inject(DomainEvents) private readonly domainEvents: Pick<DomainEvents, 'record'>,
  ) {}

  async importLaunchDarkly(tenantId: string, env: string | undefined, caller: CallerContext, body: unknown): Promise<ImportResult> {
    const environment = await this.environments.resolve(tenantId, env);
    const parsed = parseLaunchDarklyData(body);
    const requestErrors = importRequestProblems(parsed);
    if (Object.keys(requestErrors).length) throw validationProblem(requestErrors);
    if (parsed.flags.size > IMPORT_MAX_FLAGS) throw validationProblem({ flags: `at most ${IMPORT_MAX_FLAGS} flags per request` });

    // Set-based: a few statements whatever the number of flags, so the transaction (and the pool
    // connection it holds) lasts milliseconds, not one round trip per flag.
    const written = await this.transactions
      .run(async (m) => {
        // One import per tenant at a time: a second one is told so at once rather than queueing on
        // the first one's row locks with a pool connection of its own.
        if (!(await this.repo.tryLockImport(m, tenantId))) {
          throw new ProblemException(FlagProblems['import-in-progress'], 'Another import of this tenant is under way; retry when it has finished.', {}, { 'Retry-After': String(IMPORT_RETRY_AFTER_S) });
        }
        // Locked in key order, so concurrent imports and PATCHes queue instead of deadlocking.
        const locked = await this.repo.lockRows(m, tenantId, [...parsed.flags.keys()], environment);
        const needs = importNeedsApproval(environment, await this.environments.approvalRequired(tenantId, m), [...locked.keys()]);
        if (needs) throw approvalRequired(needs);
        // The stored segments the import's segmentMatch clauses name, locked: one cannot be deleted
        // meanwhile (a delete would not yet see the flags naming it), so none is left dangling.
        const named = segmentKeysNamed(parsed).filter((k) => !parsed.segments.has(k));
        const stored = await this.segments.lockStored(m, tenantId, environment, named);
        const segmentExists = (key: string) => parsed.segments.has(key) || stored.has(key);
        const mappedSegments = mapLaunchDarklySegments(parsed.segments, segmentExists);
        if (Object.keys(mappedSegments.errors).length) throw validationProblem(mappedSegments.errors);
        // Segments first, so the flags' checks below meet them written; their bounds and quotas are the segments' own.
        const segments =
          mappedSegments.segments.length > 0 ? await this.segments.importWithin(m, tenantId, environment, caller.callerId, mappedSegments.segments) : { created: [], replaced: [] };

        const current = await this.repo.definitions(tenantId, environment, m);
        const currentByKey = new Map(current.map((d) => [d.key, d]));
        const { flags, errors } = mapLaunchDarklyFlags(
          parsed.flags,
          (key) => {
            const found = locked.get(key)?.flag ?? currentByKey.get(key);
            return found ? { type: found.type, variations: found.variations } : undefined;
          },
          randomUUID,
          segmentExists,
        );
        if (Object.keys(errors).length) throw validationProblem(errors);

        const rows = importedRows(flags, locked, environment);
        // A flag whose variations change must stay valid in every other environment too.
        const changingVariations = flags.filter((f) => variationsChange(locked.get(f.key), f)).map((f) => locked.get(f.key)!.flag.id);
        const otherEnvironments = new Map<string, FlagEnvironmentEntity[]>();
        for (const row of await this.repo.envRowsOfMany(m, tenantId, changingVariations)) otherEnvironments.set(row.flagId, [...(otherEnvironments.get(row.flagId) ?? []), row]);
        const problems = importProblems(flags, rows, current, locked, otherEnvironments);
        if (Object.keys(problems).length) throw validationProblem(problems);

        const fresh = flags.filter((f) => !locked.has(f.key));
        // The import's new flags count together: all fit under the quota, or none is written.
        await this.limits.reserveFlags(m, tenantId, fresh.length);
        const ids = await this.repo.insertMany(
          m,
          tenantId,
          fresh.map((f) => rows.get(f.key)!.flag),
        );
        await this.repo.updateImportedMany(
          m,
          tenantId,
          flags
            .filter((f) => globalsChange(locked.get(f.key), f, rows.get(f.key)!.flag))
            .map((f) => {
              const { id, version, variations, clientSideAvailability } = rows.get(f.key)!.flag;
              return { flagId: id, expectedVersion: version, variations, clientSideAvailability };
            }),
        );
        // A new flag's row in this environment was just inserted at version 1.
        await this.repo.replaceTargetingMany(
          m,
          tenantId,
          environment,
          flags.map((f) => {
            const before = locked.get(f.key);
            return { flagId: before?.flag.id ?? ids.get(f.key)!, expectedVersion: before?.env.version ?? 1, ...importedTargeting(f) };
          }),
        );
        // Every flag of the import within FLAG_MAX_BYTES and all of them within the byte quota, or nothing is written.
        await this.limits.boundSize(m, tenantId, flags.map((f) => locked.get(f.key)?.flag.id ?? ids.get(f.key)!), (d) => `flags.${d.key}`, IMPORT_NAMED_ADDITIONS);
        await this.repo.auditMany(
          m,
          tenantId,
          flags.map((f) => ({
            flagKey: f.key,
            environmentKey: environment,
            action: 'import',
            actor: caller.callerId,
            changes: {
              source: 'launchdarkly',
              sourceVersion: f.sourceVersion ?? null,
              created: !locked.has(f.key),
              variations: f.variations,
              clientSideAvailability: rows.get(f.key)!.flag.clientSideAvailability,
              ...importedTargeting(f),
            },
          })),
        );
        const created: string[] = [];
        const replaced: string[] = [];
        for (const f of flags) (locked.has(f.key) ? replaced : created).push(f.key);
        await this.domainEvents.record(
          m,
          tenantId,
          ...flags.map((f) => ({ type: locked.has(f.key) ? ('flag.updated' as const) : ('flag.created' as const), data: { flagKey: f.key, environment, actor: caller.callerId, action: 'import' } })),
        );
        return { created, replaced, segments };
      })
      .catch((err: unknown) => {
        // A flag of the same key created meanwhile (it was not there to lock): nothing was written.
        if (isUniqueViolation(err)) throw new ProblemException(FlagProblems['flag-exists'], 'A flag of this import was created by another request meanwhile; nothing was imported. Retry the import.');
        throw err;
      });

    const rows = await this.repo.findRows(tenantId, [...parsed.flags.keys()], environment);
    const environmentsOf = await this.repo.environmentsOfMany(tenantId, rows.map((r) => r.flag.id));
    await this.events.changedMany(tenantId, rows.map((r) => ({ environments: environmentsOf.get(r.flag.id) ?? [], flagKey: r.flag.key, version: r.flag.version })));
    return { environment, ...written, skipped: parsed.skipped, rows };
  }
}
