import { Inject, Injectable } from '@nestjs/common';
import { ProblemException, validationProblem } from '@flagship/problem-details';
import { flagNotFound } from '../flags/flags.errors';
import { FlagsService } from '../flags/flags.service';
import type { UsageFilterDto } from '../usage/usage.dto';
import { filterOf } from '../usage/usage.service';
import { buildReport, MIN_FEEDBACK, MIN_LATENCIES, MIN_REQUESTS, type VariationReport } from './experiment-report';
import { armsOf, type FlagArms } from './experiment-variations';
import { ExperimentsRepository, type ExperimentScope, MAX_REPORTED_VARIATIONS } from './experiments.repository';

const DAY_MS = 86_400_000;
/** The range a report covers when none is given, and the longest it may cover. */
export const DEFAULT_RANGE_DAYS = 7;
export const MAX_RANGE_DAYS = 92;
/** The chart's bucket widths, the narrowest giving at most MAX_BUCKETS buckets is used. */
const BUCKET_SECONDS = [60, 300, 900, 3600, 3 * 3600, 6 * 3600, 86_400];
const MAX_BUCKETS = 100;
const FLAG_KEY = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

export interface ExperimentReportView {
  flagKey: string;
  productKey: string | null;
  from: string;
  to: string;
  controlVariationId: string | null;
  minimums: { requests: number; latencies: number; feedback: number };
  /** The gateway routes bound to this flag; those with a rollout plan have a rollout view. */
  bindings: Array<{ productKey: string; modelAlias: string | null; rolloutPlan: boolean }>;
  variations: VariationReport[];
  warnings: string[];
  series: { bucketSeconds: number; points: Array<{ at: string; variationId: string | null; recorded: string | null; requests: number; errors: number; debit: number; latencyP95Ms: number | null }> };
}

/**
 * GET /api/usage/experiments/{flagKey}: the ledger's rows of a bound flag per variation, with the
 * differences against the control (experiment-report, experiment-stats). The flag is read in
 * production (X-Environment picks another), where the gateway evaluates bindings.
 */
@Injectable()
export class ExperimentsService {
  constructor(
    private readonly repo: ExperimentsRepository,
    @Inject(FlagsService) private readonly flags: Pick<FlagsService, 'get'>,
  ) {}

  /** The clock of the default range (a spec may set it). */
  now: () => Date = () => new Date();

  async report(tenantId: string, env: string | undefined, flagKey: string, query: Pick<UsageFilterDto, 'from' | 'to' | 'productKey'>): Promise<ExperimentReportView> {
    if (!FLAG_KEY.test(flagKey)) throw flagNotFound(flagKey);
    const filter = filterOf(query);
    const to = filter.to ?? this.now();
    const from = filter.from ?? new Date(to.getTime() - DEFAULT_RANGE_DAYS * DAY_MS);
    if (to.getTime() - from.getTime() > MAX_RANGE_DAYS * DAY_MS) throw validationProblem({ from: `the range may cover at most ${MAX_RANGE_DAYS} days` });
    if (from.getTime() >= to.getTime()) throw validationProblem({ from: 'must be before to' });
    const arms = await this.armsOf(tenantId, env, flagKey);
    const scope: ExperimentScope = { tenantId, flagKey, from, to, productKey: filter.productKey };
    const bucketSeconds = BUCKET_SECONDS.find((s) => (to.getTime() - from.getTime()) / 1000 / s <= MAX_BUCKETS) ?? 86_400;
    const [figures, latencies, firstTokens, series, bindings] = await Promise.all([
      this.repo.figures(scope),
      this.repo.latencies(scope, 'latency_ms'),
      this.repo.latencies(scope, 'first_token_ms'),
      this.repo.series(scope, bucketSeconds),
      this.repo.bindingsOf(tenantId, flagKey),
    ]);
    if (!arms && figures.length === 0 && bindings.length === 0) throw flagNotFound(flagKey);
    const kept = figures.slice(0, MAX_REPORTED_VARIATIONS);
    const shown = new Set(kept.map((f) => f.variation));
    const { variations, warnings } = buildReport({ arms, figures: kept, latencies, firstTokens, series });
    if (figures.length > kept.length) warnings.push(`The ledger records more than ${MAX_REPORTED_VARIATIONS} variations of this flag in this range; only the first ${MAX_REPORTED_VARIATIONS} (in recorded order) are shown.`);
    const idOf = new Map(variations.map((v) => [v.recorded, v.variationId]));
    return {
      flagKey,
      productKey: filter.productKey ?? null,
      from: from.toISOString(),
      to: to.toISOString(),
      controlVariationId: arms?.controlId ?? null,
      minimums: { requests: MIN_REQUESTS, latencies: MIN_LATENCIES, feedback: MIN_FEEDBACK },
      bindings,
      variations,
      warnings,
      series: {
        bucketSeconds,
        points: series.filter((p) => shown.has(p.variation)).map((p) => ({ at: p.at.toISOString(), variationId: idOf.get(p.variation) ?? null, recorded: p.variation, requests: p.requests, errors: p.errors, debit: p.debit, latencyP95Ms: p.latencyP95 })),
      },
    };
  }

  /** The flag's variations and control; null when the flag is gone (its rows are still reported). */
  private async armsOf(tenantId: string, env: string | undefined, flagKey: string): Promise<FlagArms | null> {
    try {
      return armsOf(await this.flags.get(tenantId, env, flagKey));
    } catch (err) {
      if (err instanceof ProblemException && err.problem.slug === 'flag-not-found') return null;
      throw err;
    }
  }
}
