// Loaded on demand (React.lazy in FlagDetail): recharts stays out of the initial JavaScript.
import { useQuery } from '@tanstack/react-query';
import { useMemo, useState } from 'react';
import { CartesianGrid, Legend, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import type { ExperimentDifference, ExperimentReport, ExperimentVariation, RolloutView } from '@flagship/sdk';
import { request, type RequestScope } from '../../api';
import { ChoiceSelect } from '../ChoiceSelect';
import { Empty, ErrorState, Loading } from '../States';
import { credits } from '../../tenant-queries';

const COLOURS = ['#2450c7', '#d9480f', '#2b8a3e', '#862e9c', '#c2255c', '#1098ad'];
const RANGES = [
  { id: '1', name: 'last 24 hours' },
  { id: '7', name: 'last 7 days' },
  { id: '30', name: 'last 30 days' },
];
const tenantOnly = (scope: RequestScope): RequestScope => ({ ...scope, environment: undefined });

const pct = (x: number | null) => (x === null ? '—' : `${(x * 100).toFixed(2)}%`);
const ms = (x: number | null) => (x === null ? '—' : `${Math.round(x)} ms`);
const num = (x: number) => x.toLocaleString();

/** A difference and its 95% interval, for people: "+4.00 pts (0.37 to 8.35)". */
export function differenceText(d: ExperimentDifference | undefined, unit: 'points' | 'ms' | 'credits' | 'score'): string {
  if (!d) return '—';
  const f = (x: number) => (unit === 'points' ? (x * 100).toFixed(2) : unit === 'ms' ? String(Math.round(x)) : unit === 'credits' ? credits(Math.round(x)) : x.toFixed(2));
  const sign = d.estimate > 0 ? '+' : '';
  const suffix = unit === 'points' ? ' pts' : unit === 'ms' ? ' ms' : '';
  return `${sign}${f(d.estimate)}${suffix} (${f(d.lower)} to ${f(d.upper)})`;
}

/** Whether the interval excludes 0: the difference is significant at 95%. */
const significant = (d: ExperimentDifference | undefined) => d !== undefined && (d.lower > 0 || d.upper < 0);

/** One series per variation of requests (or p95 latency) per bucket, for the chart. */
export function seriesOf(report: ExperimentReport, metric: 'requests' | 'latencyP95Ms'): { names: string[]; data: Record<string, string | number | null>[] } {
  const nameOf = new Map(report.variations.map((v) => [v.recorded, v.name]));
  const buckets = new Map<string, Record<string, string | number | null>>();
  for (const p of report.series.points) {
    const name = nameOf.get(p.recorded) ?? p.recorded ?? '(route default)';
    const b = buckets.get(p.at) ?? { at: p.at.slice(0, 16).replace('T', ' ') };
    b[name] = p[metric];
    buckets.set(p.at, b);
  }
  return { names: report.variations.map((v) => v.name), data: [...buckets.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([, v]) => v) };
}

/** The side-by-side table: one column per variation, the control first, differences under each figure. */
function Comparison({ report }: { report: ExperimentReport }) {
  const vs = [...report.variations].sort((a, b) => Number(b.control) - Number(a.control));
  const rows: Array<[string, (v: ExperimentVariation) => React.ReactNode]> = [
    ['Requests', (v) => num(v.requests)],
    ['Error rate', (v) => <Figure value={pct(v.errorRate)} diff={v.vsControl?.errorRate} unit="points" />],
    ['Errors by code', (v) => Object.entries(v.errorsByCode).map(([c, n]) => `${c}: ${n}`).join(', ') || '—'],
    ['Tokens in / out', (v) => `${num(v.inputTokens)} / ${num(v.outputTokens)}`],
    ['Debited credits', (v) => credits(v.debit)],
    ['Cost per request (credits)', (v) => <Figure value={v.costPerRequest === null ? '—' : credits(Math.round(v.costPerRequest))} diff={v.vsControl?.costPerRequest} unit="credits" />],
    ['Latency p50', (v) => ms(v.latencyMs.p50)],
    ['Latency p95', (v) => <Figure value={ms(v.latencyMs.p95)} diff={v.vsControl?.latencyP95Ms} unit="ms" />],
    ['Time to first token p50', (v) => ms(v.timeToFirstTokenMs.p50)],
    ['Time to first token p95', (v) => <Figure value={ms(v.timeToFirstTokenMs.p95)} diff={v.vsControl?.timeToFirstTokenP95Ms} unit="ms" />],
    ['Mean feedback', (v) => <Figure value={v.feedback.mean === null ? '—' : `${v.feedback.mean.toFixed(2)} (${v.feedback.n})`} diff={v.vsControl?.feedback} unit="score" />],
  ];
  return (
    <div className="table-scroll" role="region" aria-label="Variations side by side" tabIndex={0}>
      <table data-testid="experiment-table">
        <caption>Variations side by side; under a figure, the difference from the control with its 95% interval</caption>
        <thead>
          <tr>
            <th scope="col">Figure</th>
            {vs.map((v) => (
              <th scope="col" key={v.recorded ?? 'default'}>
                {v.name}
                {v.control ? ' (control)' : ''}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map(([label, cell]) => (
            <tr key={label}>
              <th scope="row">{label}</th>
              {vs.map((v) => (
                <td key={v.recorded ?? 'default'}>{cell(v)}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function Figure({ value, diff, unit }: { value: string; diff: ExperimentDifference | undefined; unit: 'points' | 'ms' | 'credits' | 'score' }) {
  return (
    <>
      {value}
      {diff && (
        <span className={`diff${significant(diff) ? ' significant' : ''}`}>
          <br />Δ {differenceText(diff, unit)}
          {significant(diff) ? ' *' : ''}
        </span>
      )}
    </>
  );
}

function Chart({ report, metric, title }: { report: ExperimentReport; metric: 'requests' | 'latencyP95Ms'; title: string }) {
  const s = useMemo(() => seriesOf(report, metric), [report, metric]);
  const id = `experiment-chart-${metric}`;
  return (
    <figure className="chart" aria-labelledby={id}>
      <figcaption id={id}>{title}</figcaption>
      <ResponsiveContainer width="100%" height={220}>
        <LineChart data={s.data} accessibilityLayer>
          <CartesianGrid strokeDasharray="3 3" />
          <XAxis dataKey="at" minTickGap={40} />
          <YAxis allowDecimals={metric !== 'requests'} />
          <Tooltip />
          <Legend />
          {s.names.map((n, i) => (
            <Line key={n} dataKey={n} stroke={COLOURS[i % COLOURS.length]} dot={false} connectNulls isAnimationActive={false} />
          ))}
        </LineChart>
      </ResponsiveContainer>
    </figure>
  );
}

function Rollout({ productKey, scope }: { productKey: string; scope: RequestScope }) {
  const q = useQuery({ queryKey: ['rollout', scope.tenantId, productKey], queryFn: async () => (await request<RolloutView>('GET', `/api/gateway/bindings/${encodeURIComponent(productKey)}/rollout`, tenantOnly(scope))).body });
  if (q.isPending) return <Loading what={`the rollout of ${productKey}`} />;
  if (q.isError) return <ErrorState error={q.error} onRetry={() => void q.refetch()} />;
  const r = q.data;
  const plan = r.plan as { stages?: Array<{ percent: number; minRequests?: number; minMinutes?: number }>; guards?: Record<string, number> } | null;
  return (
    <section aria-labelledby={`rollout-${productKey}`} className="rollout">
      <h3 id={`rollout-${productKey}`}>
        Rollout on {productKey}: {r.state ? r.state.status.replace('_', ' ') : 'not started'}
      </h3>
      {r.state?.lastReason && <p className="muted">{r.state.lastReason}</p>}
      <ol className="stages" aria-label="Stages">
        {(plan?.stages ?? []).map((s, i) => (
          <li key={i} aria-current={r.state?.status === 'running' && r.state.stage === i ? 'step' : undefined} className={r.state && i < r.state.stage ? 'done' : r.state?.stage === i ? 'current' : ''}>
            {s.percent}%{s.minMinutes !== undefined ? ` · ${s.minMinutes} min` : ''}
            {s.minRequests !== undefined ? ` · ${s.minRequests} requests` : ''}
          </li>
        ))}
      </ol>
      {plan?.guards && (
        <p className="muted">
          Guards against the control: {Object.entries(plan.guards).map(([k, v]) => `${k} +${v}`).join(', ') || 'none'}
        </p>
      )}
      {r.decisions.length === 0 ? (
        <Empty>No decisions yet.</Empty>
      ) : (
        <table data-testid={`decisions-${productKey}`}>
          <caption>Decision log, newest first</caption>
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">Decision</th>
              <th scope="col">Treatment</th>
              <th scope="col">Reason</th>
            </tr>
          </thead>
          <tbody>
            {r.decisions.map((d) => (
              <tr key={d.id}>
                <td>{new Date(d.at).toLocaleString()}</td>
                <td>{d.decision.replace('_', ' ')}</td>
                <td>{d.percent}%</td>
                <td>{d.reason}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

/** The experiment view of a flag page: variations side by side, charts over time, and each bound route's rollout. */
export default function ExperimentView({ flagKey, scope }: { flagKey: string; scope: RequestScope }) {
  const [days, setDays] = useState('7');
  const q = useQuery({
    queryKey: ['experiment', scope.tenantId, flagKey, days],
    queryFn: async () => {
      const from = new Date(Date.now() - Number(days) * 86_400_000).toISOString();
      return (await request<ExperimentReport>('GET', `/api/usage/experiments/${encodeURIComponent(flagKey)}?from=${encodeURIComponent(from)}`, tenantOnly(scope))).body;
    },
  });
  return (
    <section className="panel" aria-labelledby="experiment-title">
      <div className="page-head">
        <h2 id="experiment-title">Experiment</h2>
        <ChoiceSelect label="Range" value={days} options={RANGES} onChange={setDays} />
      </div>
      {q.isPending && <Loading what="the experiment report" />}
      {q.isError && <ErrorState error={q.error} onRetry={() => void q.refetch()} hint="The experiment report is shown to admins of the tenant." />}
      {q.data && (
        <>
          {q.data.warnings.length > 0 && (
            <ul className="warnings" aria-label="Warnings">
              {q.data.warnings.map((w) => (
                <li key={w}>{w}</li>
              ))}
            </ul>
          )}
          {q.data.variations.length === 0 ? (
            <Empty>No AI gateway requests were routed by this flag in this range.</Empty>
          ) : (
            <>
              <Comparison report={q.data} />
              <p className="muted">
                Δ: treatment minus control, 95% intervals (error rate: Newcombe; cost and feedback: Welch t; p95: Maritz–Jarrett). * marks an interval that excludes 0.
              </p>
              <Chart report={q.data} metric="requests" title="Requests over time by variation" />
              <Chart report={q.data} metric="latencyP95Ms" title="p95 latency over time by variation (ms)" />
            </>
          )}
          {q.data.bindings
            .filter((b) => b.rolloutPlan)
            .map((b) => (
              <Rollout key={b.productKey} productKey={b.productKey} scope={scope} />
            ))}
        </>
      )}
    </section>
  );
}
