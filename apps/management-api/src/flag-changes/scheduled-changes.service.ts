import { Inject, Injectable, Optional, Logger } from '@nestjs/common';
import { TransactionRunner, type Tx } from '@flagship/persistence';
import { ProblemException, validationProblem } from '@flagship/problem-details';
import type { CallerContext } from '@flagship/service-kit';
import { EnvironmentsService } from '../environments/environments.service';
import type { FlagPatch } from '../flags/flag-patch';
import { approvalRequired } from '../flags/flags.errors';
import { FlagsService } from '../flags/flags.service';
import { approvalNeeded, baseOf, executeAtProblem, MAX_PENDING_SCHEDULES, patchProblem, scheduleConflicts, tenantFull } from './flag-change-rules';
import { FlagChangeProblems } from './flag-changes.errors';
import { FLAG_CHANGES_CLOCK } from './flag-change-rules';
import { FlagChangesRepository, type ScheduledChangeRow } from './flag-changes.repository';

export interface NewSchedule {
  patch: FlagPatch;
  executeAt: Date;
  author: string;
  approvedBy: string | null;
}

/** What one executor pass did with the change it claimed. */
export type Execution = { id: string; state: 'applied' } | { id: string; state: 'failed'; reason: string };

const notFound = (id: string) => new ProblemException(FlagChangeProblems['scheduled-change-not-found'], `No scheduled change ${id} of this flag in this environment.`);

/**
 * Scheduled changes: a PATCH body written at `executeAt` as the member who scheduled it. The
 * executor (ScheduledChangesRunner, in every management-api replica) claims one due row at a time
 * with FOR UPDATE SKIP LOCKED and writes the flag in the same transaction, so a change is applied
 * once: a replica that dies before committing leaves the row unclaimed for the next. A change whose
 * fields someone else changed since scheduling, or that the flag's rules now refuse, fails with its
 * reason instead of overwriting.
 */
@Injectable()
export class ScheduledChangesService {
  private readonly logger = new Logger('ScheduledChanges');

  constructor(
    @Inject(TransactionRunner) private readonly transactions: Pick<TransactionRunner, 'run'>,
    private readonly repo: FlagChangesRepository,
    @Inject(FlagsService) private readonly flags: Pick<FlagsService, 'lockWithin' | 'applyWithin' | 'auditWithin'>,
    @Inject(EnvironmentsService) private readonly environments: Pick<EnvironmentsService, 'resolve' | 'approvalRequired'>,
    @Optional() @Inject(FLAG_CHANGES_CLOCK) private readonly now: () => Date = () => new Date(),
  ) {}

  async list(tenantId: string, env: string | undefined, flagKey: string): Promise<ScheduledChangeRow[]> {
    return this.repo.listScheduled(tenantId, await this.environments.resolve(tenantId, env), flagKey);
  }

  /** Schedules a change; where approval is required it goes through a change request with executeAt instead (409 approval-required). */
  async create(tenantId: string, env: string | undefined, caller: CallerContext, flagKey: string, input: { patch: FlagPatch; executeAt: Date }): Promise<ScheduledChangeRow> {
    const environment = await this.environments.resolve(tenantId, env);
    const problems = Object.entries({ executeAt: executeAtProblem(input.executeAt, this.now()), patch: patchProblem(input.patch) }).filter(([, p]) => p !== undefined);
    if (problems.length > 0) throw validationProblem(Object.fromEntries(problems) as Record<string, string>);
    return this.transactions.run(async (m) => {
      const full = tenantFull(await this.repo.lockTenantAndCountOpen(m, tenantId));
      if (full) throw full;
      const needs = approvalNeeded(input.patch, environment, await this.environments.approvalRequired(tenantId, m));
      if (needs) throw approvalRequired(`${needs} A change request with executeAt schedules the change once approved.`);
      return this.scheduleWithin(m, tenantId, environment, flagKey, { ...input, author: caller.callerId, approvedBy: null });
    });
  }

  /** Writes a schedule in the caller's transaction (an approved change request's apply too), its base read under the flag's lock. */
  async scheduleWithin(m: Tx, tenantId: string, environment: string, flagKey: string, input: NewSchedule): Promise<ScheduledChangeRow> {
    const row = await this.flags.lockWithin(m, tenantId, environment, flagKey);
    if ((await this.repo.countScheduled(m, tenantId, environment, flagKey)) >= MAX_PENDING_SCHEDULES) {
      throw new ProblemException(FlagChangeProblems['too-many-pending-changes'], `Flag ${flagKey} has ${MAX_PENDING_SCHEDULES} changes scheduled in ${environment}; cancel some first.`, {
        limit: MAX_PENDING_SCHEDULES,
      });
    }
    const created = await this.repo.insertScheduled(m, tenantId, { environment, flagKey, patch: input.patch, base: baseOf(row, input.patch), executeAt: input.executeAt, author: input.author, approvedBy: input.approvedBy });
    await this.flags.auditWithin(m, tenantId, { flagKey, environmentKey: environment, action: 'schedule', actor: input.author, changes: { id: created.id, state: 'scheduled', executeAt: input.executeAt.toISOString() } });
    return created;
  }

  async cancel(tenantId: string, env: string | undefined, caller: CallerContext, flagKey: string, id: string): Promise<void> {
    const environment = await this.environments.resolve(tenantId, env);
    await this.transactions.run(async (m) => {
      const found = await this.repo.findScheduled(tenantId, environment, flagKey, id, m);
      if (!found) throw notFound(id);
      if (found.state !== 'scheduled') throw new ProblemException(FlagChangeProblems['scheduled-change-closed'], `The scheduled change is ${found.state}.`, { state: found.state });
      await this.repo.finishScheduled(m, tenantId, id, 'cancelled', null, this.now());
      await this.flags.auditWithin(m, tenantId, { flagKey, environmentKey: environment, action: 'schedule', actor: caller.callerId, changes: { id, state: 'cancelled' } });
    });
  }

  /**
   * Claims and executes the earliest due change, if any: applied, or failed with its reason. A
   * refusal the flag's rules throw (404, 422, 409) rolls the claim back with the write, so the
   * failure is recorded in a second transaction, only while the row is still scheduled.
   */
  async executeNext(): Promise<Execution | null> {
    const now = this.now();
    let claimed: ScheduledChangeRow | null = null;
    try {
      return await this.transactions.run(async (m) => {
        claimed = await this.repo.claimDue(m, now);
        if (!claimed) return null;
        const c: ScheduledChangeRow = claimed;
        const refusal = await this.refusal(m, c);
        if (refusal) {
          await this.finish(m, c, 'failed', refusal, now);
          return { id: c.id, state: 'failed', reason: refusal };
        }
        const conflict = await this.flags.applyWithin(m, c.tenantId, c.environment, c.author, c.flagKey, c.patch, (row) => {
          const fields = scheduleConflicts(c.base, row);
          return fields.length === 0 ? undefined : new ProblemException(FlagChangeProblems['scheduled-change-closed'], `changed since it was scheduled: ${fields.join(', ')}`);
        });
        if (conflict) {
          await this.finish(m, c, 'failed', `conflict: ${conflict.detail}`, now);
          return { id: c.id, state: 'failed', reason: `conflict: ${conflict.detail}` };
        }
        await this.finish(m, c, 'applied', null, now);
        return { id: c.id, state: 'applied' };
      });
    } catch (err) {
      const c = claimed as ScheduledChangeRow | null;
      if (!c || !(err instanceof ProblemException) || err.getStatus() >= 500) throw err;
      const reason = `${err.detail}${err.extensions?.['errors'] ? ` ${JSON.stringify(err.extensions['errors'])}` : ''}`;
      const recorded = await this.transactions.run(async (m) => {
        if (!(await this.repo.claimScheduled(m, c.tenantId, c.id))) return false;
        await this.finish(m, c, 'failed', reason, now);
        return true;
      });
      this.logger.log(`scheduled change ${c.id} of ${c.flagKey} failed: ${reason}`);
      return recorded ? { id: c.id, state: 'failed', reason } : null;
    }
  }

  /** Why a claimed change may not run now: approval became required and it was never approved. */
  private async refusal(m: Tx, c: ScheduledChangeRow): Promise<string | undefined> {
    if (c.approvedBy) return undefined;
    const needs = approvalNeeded(c.patch, c.environment, await this.environments.approvalRequired(c.tenantId, m));
    return needs ? `approval-required: ${needs}` : undefined;
  }

  private async finish(m: Tx, c: ScheduledChangeRow, state: 'applied' | 'failed', reason: string | null, at: Date): Promise<void> {
    await this.repo.finishScheduled(m, c.tenantId, c.id, state, reason, at);
    await this.flags.auditWithin(m, c.tenantId, { flagKey: c.flagKey, environmentKey: c.environment, action: 'schedule', actor: c.author, changes: reason ? { id: c.id, state, reason } : { id: c.id, state } });
  }
}
