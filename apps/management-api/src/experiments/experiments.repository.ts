import { Inject, Injectable } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { DATA_SOURCE, type Tx } from '@flagship/persistence';

/** Which ledger rows an experiment reads: one tenant's rows of one flag in [from, to), optionally of one product key and some variations. */
export interface ExperimentScope {
  tenantId: string;
  flagKey: string;
  from: Date;
  to: Date;
  productKey?: string;
  /** Only these recorded variations (the rollout's control and treatment); absent: all. */
  variations?: readonly string[];
}

/** The figures of one recorded variation (null: the route's default, served when the binding could not be evaluated). */
export interface VariationFigures {
  variation: string | null;
  requests: number;
  errors: number;
  inputTokens: number;
  outputTokens: number;
  debit: number;
  debitSquares: number;
  latency: { n: number; p50: number | null; p95: number | null };
  firstToken: { n: number; p50: number | null; p95: number | null };
  feedback: { n: number; sum: number; squares: number };
  errorsByCode: Record<string, number>;
}

export interface SeriesPoint {
  variation: string | null;
  at: Date;
  requests: number;
  errors: number;
  debit: number;
  latencyP95: number | null;
}

/** Recorded variations past this many are left out of a report (a flag has far fewer; the rest is a bug or an attack). */
export const MAX_REPORTED_VARIATIONS = 50;
/** Latencies read per variation for a quantile's standard error; past it, a uniform sample by row id's hash. */
export const MAX_LATENCY_SAMPLE = 20_000;

/**
 * The usage ledger read per flag variation (the experiment report and the guarded rollout). A row
 * counts once it completed (`pending` rows are in flight); `failed` and `abandoned` rows are errors;
 * latencies are those of succeeded rows (a fast failure is no fast answer); feedback is joined by the
 * gateway's request id. Every statement names the tenant first.
 */
@Injectable()
export class ExperimentsRepository {
  constructor(@Inject(DATA_SOURCE) private readonly ds: DataSource) {}

  /** Up to MAX_REPORTED_VARIATIONS + 1 variations (one more tells the caller some were left out), in recorded order. */
  async figures(scope: ExperimentScope, m?: Tx): Promise<VariationFigures[]> {
    const { where, params } = whereOf(scope, 'l.');
    const rows: Array<Record<string, string | null>> = await (m ?? this.ds).query(
      `SELECT l.variation,
              count(*)::text AS requests,
              count(*) FILTER (WHERE l.status <> 'succeeded')::text AS errors,
              sum(l.input_tokens)::text AS input_tokens,
              sum(l.output_tokens)::text AS output_tokens,
              sum(l.debit)::text AS debit,
              sum(l.debit::float8 * l.debit::float8)::text AS debit_squares,
              count(l.latency_ms) FILTER (WHERE l.status = 'succeeded')::text AS latency_n,
              percentile_disc(0.5) WITHIN GROUP (ORDER BY l.latency_ms) FILTER (WHERE l.status = 'succeeded')::text AS latency_p50,
              percentile_disc(0.95) WITHIN GROUP (ORDER BY l.latency_ms) FILTER (WHERE l.status = 'succeeded')::text AS latency_p95,
              count(l.first_token_ms) FILTER (WHERE l.status = 'succeeded' AND l.stream)::text AS first_token_n,
              percentile_disc(0.5) WITHIN GROUP (ORDER BY l.first_token_ms) FILTER (WHERE l.status = 'succeeded' AND l.stream)::text AS first_token_p50,
              percentile_disc(0.95) WITHIN GROUP (ORDER BY l.first_token_ms) FILTER (WHERE l.status = 'succeeded' AND l.stream)::text AS first_token_p95,
              count(f.score)::text AS feedback_n,
              coalesce(sum(f.score), 0)::text AS feedback_sum,
              coalesce(sum(f.score * f.score), 0)::text AS feedback_squares
         FROM usage_ledger l
         LEFT JOIN usage_feedback f ON f.tenant_id = l.tenant_id AND f.request_id = l.request_id
        WHERE ${where.join(' AND ')}
        GROUP BY l.variation ORDER BY l.variation COLLATE "C" NULLS FIRST LIMIT ${MAX_REPORTED_VARIATIONS + 1}`,
      params,
    );
    const codes: Array<{ variation: string | null; code: string; n: string }> = await (m ?? this.ds).query(
      `SELECT l.variation, coalesce(l.error_code, l.status) AS code, count(*)::text AS n
         FROM usage_ledger l WHERE ${where.join(' AND ')} AND l.status <> 'succeeded'
        GROUP BY 1, 2 ORDER BY 1, 2 LIMIT ${MAX_REPORTED_VARIATIONS * 20}`,
      params,
    );
    const num = (v: string | null) => (v === null ? 0 : Number(v));
    const opt = (v: string | null) => (v === null ? null : Number(v));
    return rows.map((r) => ({
      variation: r['variation'],
      requests: num(r['requests']),
      errors: num(r['errors']),
      inputTokens: num(r['input_tokens']),
      outputTokens: num(r['output_tokens']),
      debit: num(r['debit']),
      debitSquares: num(r['debit_squares']),
      latency: { n: num(r['latency_n']), p50: opt(r['latency_p50']), p95: opt(r['latency_p95']) },
      firstToken: { n: num(r['first_token_n']), p50: opt(r['first_token_p50']), p95: opt(r['first_token_p95']) },
      feedback: { n: num(r['feedback_n']), sum: num(r['feedback_sum']), squares: num(r['feedback_squares']) },
      errorsByCode: Object.fromEntries(codes.filter((c) => c.variation === r['variation']).map((c) => [c.code, Number(c.n)])),
    }));
  }

  /**
   * The succeeded rows' latencies (or times to first token) of each variation, ascending: all of them
   * up to MAX_LATENCY_SAMPLE, else that many chosen by the hash of the row id (a uniform sample).
   */
  async latencies(scope: ExperimentScope, column: 'latency_ms' | 'first_token_ms', m?: Tx): Promise<Map<string | null, number[]>> {
    const { where, params } = whereOf(scope, 'l.');
    const rows: Array<{ variation: string | null; values: number[] }> = await (m ?? this.ds).query(
      `SELECT variation, array_agg(v ORDER BY v) AS values FROM (
         SELECT l.variation, l.${column} AS v,
                row_number() OVER (PARTITION BY l.variation ORDER BY md5(l.id::text)) AS k
           FROM usage_ledger l
          WHERE ${where.join(' AND ')} AND l.status = 'succeeded' AND l.${column} IS NOT NULL${column === 'first_token_ms' ? ' AND l.stream' : ''}
       ) s WHERE k <= ${MAX_LATENCY_SAMPLE} GROUP BY variation ORDER BY variation COLLATE "C" NULLS FIRST LIMIT ${MAX_REPORTED_VARIATIONS}`,
      params,
    );
    return new Map(rows.map((r) => [r.variation, r.values.map(Number)]));
  }

  /** The gateway bindings routing by this flag (the report links their rollouts). */
  async bindingsOf(tenantId: string, flagKey: string): Promise<Array<{ productKey: string; modelAlias: string | null; rolloutPlan: boolean }>> {
    const rows: Array<{ product_key: string; model_alias: string | null; planned: boolean }> = await this.ds.query(
      `SELECT product_key, model_alias, rollout_plan IS NOT NULL AS planned FROM gateway_bindings WHERE tenant_id = $1 AND flag_key = $2 ORDER BY product_key LIMIT 100`,
      [tenantId, flagKey],
    );
    return rows.map((r) => ({ productKey: r.product_key, modelAlias: r.model_alias, rolloutPlan: r.planned }));
  }

  /** Per variation and bucket of `bucketSeconds` from `scope.from`: requests, errors, debits and p95 latency. */
  async series(scope: ExperimentScope, bucketSeconds: number, m?: Tx): Promise<SeriesPoint[]> {
    const { where, params } = whereOf(scope, 'l.');
    params.push(`${bucketSeconds} seconds`);
    const rows: Array<Record<string, string | null>> = await (m ?? this.ds).query(
      `SELECT l.variation, date_bin($${params.length}::interval, l.created_at, $3::timestamptz) AS at,
              count(*)::text AS requests, count(*) FILTER (WHERE l.status <> 'succeeded')::text AS errors, sum(l.debit)::text AS debit,
              percentile_disc(0.95) WITHIN GROUP (ORDER BY l.latency_ms) FILTER (WHERE l.status = 'succeeded')::text AS latency_p95
         FROM usage_ledger l WHERE ${where.join(' AND ')}
        GROUP BY 1, 2 ORDER BY 2, l.variation COLLATE "C" NULLS FIRST LIMIT 20000`,
      params,
    );
    return rows.map((r) => ({
      variation: r['variation'],
      at: new Date(r['at'] as unknown as string),
      requests: Number(r['requests']),
      errors: Number(r['errors']),
      debit: Number(r['debit']),
      latencyP95: r['latency_p95'] === null ? null : Number(r['latency_p95']),
    }));
  }
}

/** The scope as a WHERE over usage_ledger `l`: $1 tenant, $2 flag, $3 from, $4 to, then the options. */
function whereOf(s: ExperimentScope, p: string): { where: string[]; params: unknown[] } {
  const where = [`${p}tenant_id = $1`, `${p}flag_key = $2`, `${p}created_at >= $3`, `${p}created_at < $4`, `${p}status <> 'pending'`];
  const params: unknown[] = [s.tenantId, s.flagKey, s.from, s.to];
  if (s.productKey !== undefined) {
    params.push(s.productKey);
    where.push(`${p}product_key = $${params.length}`);
  }
  if (s.variations !== undefined) {
    params.push(s.variations);
    where.push(`${p}variation = ANY($${params.length}::text[])`);
  }
  return { where, params };
}
