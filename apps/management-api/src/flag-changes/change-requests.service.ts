import { Inject, Injectable, Optional } from '@nestjs/common';
import { TransactionRunner } from '@flagship/persistence';
import { ProblemException, validationProblem } from '@flagship/problem-details';
import type { CallerContext } from '@flagship/service-kit';
import { EnvironmentsService } from '../environments/environments.service';
import { etagOf } from '../flags/flag.mapper';
import type { FlagPatch } from '../flags/flag-patch';
import { FlagsService } from '../flags/flags.service';
import { approvalRefusal, type ChangeRequestAction, MAX_COMMENTS, MAX_OPEN_CHANGE_REQUESTS, patchProblem, staleRequest, tenantFull, transition } from './flag-change-rules';
import { FlagChangeProblems } from './flag-changes.errors';
import { FLAG_CHANGES_CLOCK } from './flag-change-rules';
import { type ChangeRequestRow, FlagChangesRepository } from './flag-changes.repository';
import { ScheduledChangesService } from './scheduled-changes.service';

export interface NewChangeRequestInput {
  patch: FlagPatch;
  comment?: string;
  executeAt?: Date;
}

const notFound = (id: string) => new ProblemException(FlagChangeProblems['change-request-not-found'], `No change request ${id} of this flag in this environment.`);

/**
 * Change requests (approvals): a PATCH body made against the flag's version, approved by another
 * member (editor or above), then applied with PATCH's version check, as its author. A request made
 * against a version the flag has left is stale at approval or apply, and says so (409).
 */
@Injectable()
export class ChangeRequestsService {
  constructor(
    @Inject(TransactionRunner) private readonly transactions: Pick<TransactionRunner, 'run'>,
    private readonly repo: FlagChangesRepository,
    @Inject(FlagsService) private readonly flags: Pick<FlagsService, 'lockWithin' | 'applyWithin' | 'auditWithin'>,
    @Inject(EnvironmentsService) private readonly environments: Pick<EnvironmentsService, 'resolve'>,
    @Inject(ScheduledChangesService) private readonly schedules: Pick<ScheduledChangesService, 'scheduleWithin'>,
    @Optional() @Inject(FLAG_CHANGES_CLOCK) private readonly now: () => Date = () => new Date(),
  ) {}

  async list(tenantId: string, env: string | undefined, flagKey: string): Promise<ChangeRequestRow[]> {
    return this.repo.listRequests(tenantId, await this.environments.resolve(tenantId, env), flagKey);
  }

  async get(tenantId: string, env: string | undefined, flagKey: string, id: string): Promise<ChangeRequestRow> {
    const found = await this.repo.findRequest(tenantId, await this.environments.resolve(tenantId, env), flagKey, id);
    if (!found) throw notFound(id);
    return found;
  }

  async create(tenantId: string, env: string | undefined, caller: CallerContext, flagKey: string, input: NewChangeRequestInput): Promise<ChangeRequestRow> {
    const environment = await this.environments.resolve(tenantId, env);
    const tooLarge = patchProblem(input.patch);
    if (tooLarge) throw validationProblem({ patch: tooLarge });
    return this.transactions.run(async (m) => {
      const full = tenantFull(await this.repo.lockTenantAndCountOpen(m, tenantId));
      if (full) throw full;
      // The flag's lock orders requests of one flag, so the bound below holds under concurrent posts.
      const row = await this.flags.lockWithin(m, tenantId, environment, flagKey);
      if ((await this.repo.countOpenRequests(m, tenantId, environment, flagKey)) >= MAX_OPEN_CHANGE_REQUESTS) {
        throw new ProblemException(FlagChangeProblems['too-many-pending-changes'], `Flag ${flagKey} has ${MAX_OPEN_CHANGE_REQUESTS} open change requests in ${environment}; approve, apply or reject some first.`, {
          limit: MAX_OPEN_CHANGE_REQUESTS,
        });
      }
      const at = this.now().toISOString();
      const created = await this.repo.insertRequest(m, tenantId, {
        environment,
        flagKey,
        patch: input.patch,
        baseVersion: etagOf(row),
        executeAt: input.executeAt ?? null,
        author: caller.callerId,
        comments: input.comment ? [{ author: caller.callerId, body: input.comment, at }] : [],
      });
      await this.flags.auditWithin(m, tenantId, { flagKey, environmentKey: environment, action: 'change-request', actor: caller.callerId, changes: { id: created.id, state: 'pending' } });
      return created;
    });
  }

  /** Approval: another member, editor or above, while the flag is still at the request's version. */
  approve(tenantId: string, env: string | undefined, caller: CallerContext, flagKey: string, id: string, comment?: string): Promise<ChangeRequestRow> {
    return this.decide(tenantId, env, caller, flagKey, id, 'approve', comment);
  }

  reject(tenantId: string, env: string | undefined, caller: CallerContext, flagKey: string, id: string, comment?: string): Promise<ChangeRequestRow> {
    return this.decide(tenantId, env, caller, flagKey, id, 'reject', comment);
  }

  /** Applies an approved request as its author (or schedules it, when it names executeAt), only at the version it was made against. */
  apply(tenantId: string, env: string | undefined, caller: CallerContext, flagKey: string, id: string): Promise<ChangeRequestRow> {
    return this.decide(tenantId, env, caller, flagKey, id, 'apply');
  }

  async comment(tenantId: string, env: string | undefined, caller: CallerContext, flagKey: string, id: string, body: string): Promise<ChangeRequestRow> {
    const environment = await this.environments.resolve(tenantId, env);
    return this.transactions.run(async (m) => {
      const request = await this.repo.findRequest(tenantId, environment, flagKey, id, m);
      if (!request) throw notFound(id);
      if (request.comments.length >= MAX_COMMENTS) throw new ProblemException(FlagChangeProblems['too-many-comments'], `A change request holds at most ${MAX_COMMENTS} comments.`, { limit: MAX_COMMENTS });
      await this.repo.addComment(m, tenantId, id, { author: caller.callerId, body, at: this.now().toISOString() });
      return (await this.repo.findRequest(tenantId, environment, flagKey, id, m))!;
    });
  }

  /**
   * One step of the state machine, in one transaction with the flag locked: the transition's rule,
   * the approver's, then the version check. A stale request is recorded stale and committed before
   * the 409 is thrown, so it reads stale afterwards too.
   */
  private async decide(tenantId: string, env: string | undefined, caller: CallerContext, flagKey: string, id: string, action: ChangeRequestAction, comment?: string): Promise<ChangeRequestRow> {
    const environment = await this.environments.resolve(tenantId, env);
    const outcome = await this.transactions.run(async (m): Promise<ChangeRequestRow | ProblemException> => {
      const request = await this.repo.findRequest(tenantId, environment, flagKey, id, m);
      if (!request) throw notFound(id);
      const next = transition(request.state, action);
      if (next instanceof ProblemException) throw next;
      if (comment && request.comments.length >= MAX_COMMENTS) throw new ProblemException(FlagChangeProblems['too-many-comments'], `A change request holds at most ${MAX_COMMENTS} comments.`, { limit: MAX_COMMENTS });
      if (action === 'approve') {
        const refusal = approvalRefusal(caller, request);
        if (refusal) throw refusal;
      }
      const now = this.now();
      let stale: ProblemException | undefined;
      if (action === 'reject') {
        await this.repo.updateRequest(m, tenantId, id, { state: next, decidedBy: caller.callerId, decidedAt: now });
      } else if (action === 'approve') {
        stale = staleRequest(request, await this.flags.lockWithin(m, tenantId, environment, flagKey));
        if (!stale) await this.repo.updateRequest(m, tenantId, id, { state: next, decidedBy: caller.callerId, decidedAt: now });
      } else if (request.executeAt) {
        stale = staleRequest(request, await this.flags.lockWithin(m, tenantId, environment, flagKey));
        if (!stale) await this.schedules.scheduleWithin(m, tenantId, environment, flagKey, { patch: request.patch, executeAt: request.executeAt, author: request.author, approvedBy: request.decidedBy });
      } else {
        // Written as its author: the change is theirs; who approved and applied it is on the request and in its audit record.
        stale = await this.flags.applyWithin(m, tenantId, environment, request.author, flagKey, request.patch, (row) => staleRequest(request, row));
      }
      if (stale) {
        await this.repo.updateRequest(m, tenantId, id, { state: 'stale' });
        return stale;
      }
      if (action === 'apply') await this.repo.updateRequest(m, tenantId, id, { state: next, appliedBy: caller.callerId, appliedAt: now });
      if (comment) await this.repo.addComment(m, tenantId, id, { author: caller.callerId, body: comment, at: now.toISOString() });
      await this.flags.auditWithin(m, tenantId, { flagKey, environmentKey: environment, action: 'change-request', actor: caller.callerId, changes: { id, state: next } });
      return (await this.repo.findRequest(tenantId, environment, flagKey, id, m))!;
    });
    if (outcome instanceof ProblemException) throw outcome;
    return outcome;
  }
}
