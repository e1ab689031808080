import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { APP_CONFIG } from '@flagship/config';
import { TransactionRunner, type Tx } from '@flagship/persistence';
import { ProblemException } from '@flagship/problem-details';
import type { ManagementApiConfig } from '../env.schema';
import { armsOf, type FlagArms, treatmentOf, variationNamed } from '../experiments/experiment-variations';
import { ExperimentsRepository } from '../experiments/experiments.repository';
import { FlagsService } from '../flags/flags.service';
import type { FlagRow } from '../flags/flags.repository';
import { type ArmFigures, decide, planProblem, type RolloutPlan, weightsFor } from './rollout-rules';
import { type PlannedBinding, type RolloutDecisionKind, RolloutsRepository, type RolloutState } from './rollouts.repository';

export const ROLLOUT_CLOCK = Symbol('ROLLOUT_CLOCK');

/** What one pass did with the binding it claimed. */
export interface RolloutStep {
  tenantId: string;
  productKey: string;
  decision: RolloutDecisionKind;
  reason: string;
}

/** A refusal that stops the plan (recorded as `stopped`), thrown inside the claiming transaction. */
class StopPlan extends Error {}

/**
 * Guarded rollouts (CONTRACT.md section 11). RolloutRunner, in every replica, calls `runNext`: it
 * claims one binding whose plan needs a decision (row lock, SKIP LOCKED), judges it on the ledger
 * since the stage began (rollout-rules), and in the same transaction writes the flag through
 * FlagsService.applyWithin (versioned, audited as `rollout:{productKey}`, a flag.updated webhook event,
 * the change feed), the plan's state and the decision log: a decision is taken once, by one replica.
 * The plan writes the flag's fallthrough weights (variations' `weight`) between control and treatment.
 */
@Injectable()
export class RolloutsService {
  private readonly logger = new Logger('Rollouts');

  constructor(
    @Inject(TransactionRunner) private readonly transactions: Pick<TransactionRunner, 'run'>,
    private readonly repo: RolloutsRepository,
    @Inject(ExperimentsRepository) private readonly ledger: Pick<ExperimentsRepository, 'figures' | 'latencies'>,
    @Inject(FlagsService) private readonly flags: Pick<FlagsService, 'lockWithin' | 'applyWithin' | 'auditWithin'>,
    @Inject(APP_CONFIG) private readonly config: Pick<ManagementApiConfig, 'ROLLOUT_CHECK_MS'>,
    @Optional() @Inject(ROLLOUT_CLOCK) private readonly now: () => Date = () => new Date(),
  ) {}

  async runNext(): Promise<RolloutStep | null> {
    const now = this.now();
    let claimed: PlannedBinding | undefined;
    try {
      return await this.transactions.run(async (m) => {
        const due = await this.repo.claimDue(m, now);
        if (!due) return null;
        claimed = due.binding;
        return await this.judge(m, due.binding, due.state, now);
      });
    } catch (err) {
      const b = claimed as PlannedBinding | undefined;
      // The flag's rules refused the write (a 4xx), or the plan cannot run: the plan stops, with the reason.
      const stop = err instanceof StopPlan ? err.message : err instanceof ProblemException && err.getStatus() < 500 ? `the flag write was refused: ${err.detail}` : undefined;
      if (!b || stop === undefined) throw err;
      return this.transactions.run(async (m) => {
        const again = await this.repo.claimDue(m, now);
        if (!again || again.binding.tenantId !== b.tenantId || again.binding.productKey !== b.productKey) return null;
        const state = again.state;
        await this.record(m, again.binding, state, 'stopped', stop, { status: 'stopped', stage: state?.stage ?? 0 }, now);
        return { tenantId: b.tenantId, productKey: b.productKey, decision: 'stopped' as const, reason: stop };
      });
    }
  }

  private async judge(m: Tx, b: PlannedBinding, state: RolloutState | null, now: Date): Promise<RolloutStep> {
    const problem = planProblem(b.rolloutPlan);
    if (problem) throw new StopPlan(`the plan cannot run: ${problem}`);
    const plan = b.rolloutPlan as RolloutPlan;
    const fresh = !state || state.bindingVersion !== b.version;
    if (plan.paused) {
      await this.record(m, b, fresh ? null : state, 'paused', 'the plan is paused', { status: 'paused', stage: fresh ? 0 : state.stage }, now);
      return { tenantId: b.tenantId, productKey: b.productKey, decision: 'paused', reason: 'the plan is paused' };
    }
    const row = await this.lockFlag(m, b);
    const arms = armsOf(row);
    if (fresh) {
      const treatment = treatmentOf(arms, plan.treatment);
      if (!arms.controlId || !treatment) throw new StopPlan(`flag ${b.flagKey} has no ${arms.controlId ? 'treatment' : 'control'} variation${plan.treatment ? ` named ${plan.treatment}` : ''}`);
      const percent = plan.stages[0]!.percent;
      const reason = `plan started: ${percent}% to ${treatment.name}, the rest to ${variationNamed(arms, arms.controlId)?.name}`;
      const written = await this.writeWeights(m, b, arms, arms.controlId, treatment.id, percent);
      await this.record(m, b, null, 'started', reason, { status: 'running', stage: 0, stageStartedAt: now, controlId: arms.controlId, treatmentId: treatment.id, ...written }, now, undefined, percent);
      return { tenantId: b.tenantId, productKey: b.productKey, decision: 'started', reason };
    }
    if (row.flag.version !== state.flagVersion || row.env.version !== state.envVersion) {
      throw new StopPlan(`flag ${b.flagKey} was changed since the plan's last write (version ${state.flagVersion}.${state.envVersion}, now ${row.flag.version}.${row.env.version}): the plan stops and leaves it as it is`);
    }
    const control = state.controlId!;
    const treatment = state.treatmentId!;
    const [control_, treatment_] = await this.armFigures(m, b, arms, state, now, control, treatment);
    const d = decide(plan, state.stage, state.stageStartedAt, now, control_, treatment_);
    const percentNow = plan.stages[state.stage]!.percent;
    switch (d.kind) {
      case 'rollback': {
        const written = await this.writeWeights(m, b, arms, control, treatment, 0);
        await this.record(m, b, state, 'rolled_back', d.reason, { status: 'rolled_back', ...written }, now, d.figures, 0);
        break;
      }
      case 'advance': {
        const written = await this.writeWeights(m, b, arms, control, treatment, d.percent);
        await this.record(m, b, state, 'advanced', d.reason, { stage: d.stage, stageStartedAt: now, ...written }, now, d.figures, d.percent);
        break;
      }
      case 'complete':
        await this.record(m, b, state, 'completed', d.reason, { status: 'completed' }, now, d.figures, percentNow);
        break;
      case 'hold':
        await this.record(m, b, state, 'held', d.reason, {}, now, d.figures, percentNow);
        break;
    }
    const decision = ({ rollback: 'rolled_back', advance: 'advanced', complete: 'completed', hold: 'held' } as const)[d.kind];
    if (decision !== 'held') this.logger.log(`rollout of ${b.productKey} (${b.flagKey}) ${decision}: ${d.reason}`);
    return { tenantId: b.tenantId, productKey: b.productKey, decision, reason: d.reason };
  }

  private async lockFlag(m: Tx, b: PlannedBinding): Promise<FlagRow> {
    try {
      return await this.flags.lockWithin(m, b.tenantId, b.environment, b.flagKey);
    } catch (err) {
      if (err instanceof ProblemException && err.getStatus() === 404) throw new StopPlan(`flag ${b.flagKey} does not exist`);
      throw err;
    }
  }

  /** The control's and treatment's ledger figures since the stage began, of this binding's product key. */
  private async armFigures(m: Tx, b: PlannedBinding, arms: FlagArms, state: RolloutState, now: Date, control: string, treatment: string): Promise<[ArmFigures, ArmFigures]> {
    const scope = { tenantId: b.tenantId, flagKey: b.flagKey, productKey: b.productKey, from: state.stageStartedAt, to: new Date(now.getTime() + 1) };
    const [figures, latencies] = await Promise.all([this.ledger.figures(scope, m), this.ledger.latencies(scope, 'latency_ms', m)]);
    const of = (id: string): ArmFigures => {
      const out: ArmFigures = { requests: 0, errors: 0, latencies: [], debit: 0, debitSquares: 0 };
      for (const f of figures) {
        if (f.variation === null || variationNamed(arms, f.variation)?.id !== id) continue;
        out.requests += f.requests;
        out.errors += f.errors;
        out.debit += f.debit;
        out.debitSquares += f.debitSquares;
        out.latencies.push(...(latencies.get(f.variation) ?? []));
      }
      out.latencies.sort((x, y) => x - y);
      return out;
    };
    return [of(control), of(treatment)];
  }

  /** Writes the weights through the flag's normal write path, as the rollout; the flag's versions after it. */
  private async writeWeights(m: Tx, b: PlannedBinding, arms: FlagArms, controlId: string, treatmentId: string, percent: number): Promise<{ flagVersion: number; envVersion: number }> {
    const variations = weightsFor(arms.variations as FlagRow['flag']['variations'], controlId, treatmentId, percent);
    const refusal = await this.flags.applyWithin(m, b.tenantId, b.environment, `rollout:${b.productKey}`, b.flagKey, { variations });
    if (refusal) throw refusal;
    const after = await this.flags.lockWithin(m, b.tenantId, b.environment, b.flagKey);
    return { flagVersion: after.flag.version, envVersion: after.env.version };
  }

  /**
   * Saves the state and logs the decision (and audits it on the flag as the rollout); a `held` is
   * logged only when its reason changes in kind (not at every check while requests accrue).
   */
  private async record(
    m: Tx,
    b: PlannedBinding,
    state: RolloutState | null,
    decision: RolloutDecisionKind,
    reason: string,
    changes: Partial<RolloutState>,
    now: Date,
    figures?: unknown,
    percent?: number,
  ): Promise<void> {
    const plan = b.rolloutPlan as Partial<RolloutPlan> | null;
    const next: Omit<RolloutState, 'updatedAt'> = {
      tenantId: b.tenantId,
      productKey: b.productKey,
      bindingVersion: b.version,
      flagKey: b.flagKey,
      status: state?.status ?? 'running',
      stage: state?.stage ?? 0,
      stageStartedAt: state?.stageStartedAt ?? now,
      controlId: state?.controlId ?? null,
      treatmentId: state?.treatmentId ?? null,
      flagVersion: state?.flagVersion ?? null,
      envVersion: state?.envVersion ?? null,
      lastReason: reason,
      nextCheckAt: new Date(now.getTime() + this.config.ROLLOUT_CHECK_MS),
      ...changes,
    };
    await this.repo.saveState(m, next);
    const shape = (r: string | null) => r?.replace(/\d+(\.\d+)?/g, '#') ?? null;
    if (decision === 'held' && shape(state?.lastReason ?? null) === shape(reason)) return;
    const at = percent ?? plan?.stages?.[next.stage]?.percent ?? 0;
    await this.repo.logDecision(m, b.tenantId, b.productKey, { bindingVersion: b.version, flagKey: b.flagKey, decision, stage: next.stage, percent: at, reason, figures: figures ?? null, flagVersion: next.flagVersion }, now);
    if (decision !== 'held') {
      await this.flags.auditWithin(m, b.tenantId, { flagKey: b.flagKey, environmentKey: b.environment, action: 'rollout', actor: `rollout:${b.productKey}`, changes: { productKey: b.productKey, decision, stage: next.stage, percent: at, reason } });
    }
  }
}
