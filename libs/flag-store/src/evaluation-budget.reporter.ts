import { Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { Counter } from 'prom-client';
import { onEvaluationOverBudget } from '@flagship/flag-evaluation';
import { HttpMetrics } from '@flagship/service-kit';

/** Logged at most this often: a flag over budget is evaluated again and again. */
const LOG_EVERY_MS = 60_000;

/**
 * Counts (`flag_evaluations_over_budget_total`) and logs (the flag's key, at most once a minute per
 * flag) the evaluations that ran out of the evaluator's step budget and answered
 * ERROR/MALFORMED_FLAG (libs/flag-evaluation, budget.ts): only data written around the API's bounds
 * gets there. The key is logged rather than a label, to keep the series few.
 */
@Injectable()
export class EvaluationBudgetReporter implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('EvaluationBudget');
  private readonly counter: Counter;
  private readonly loggedAt = new Map<string, number>();
  private stop: (() => void) | undefined;

  constructor(metrics: HttpMetrics) {
    this.counter = new Counter({
      name: 'flag_evaluations_over_budget_total',
      help: 'Flag evaluations that ran out of the step budget and answered ERROR/MALFORMED_FLAG',
      registers: [metrics.registry],
    });
  }

  onModuleInit(): void {
    this.stop = onEvaluationOverBudget((flag) => {
      this.counter.inc();
      const now = Date.now();
      if (now - (this.loggedAt.get(flag) ?? 0) < LOG_EVERY_MS) return;
      if (this.loggedAt.size > 1000) this.loggedAt.clear();
      this.loggedAt.set(flag, now);
      this.logger.warn(`flag '${flag}' ran out of the evaluation budget: answered ERROR/MALFORMED_FLAG (its targeting is beyond the API's bounds)`);
    });
  }

  onModuleDestroy(): void {
    this.stop?.();
  }
}
