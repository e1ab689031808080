// Loaded on demand (React.lazy in App.tsx): recharts stays out of the initial JavaScript.
import { useMutation } from '@tanstack/react-query';
import { useMemo, useState } from 'react';
import { Button, Form, Input, Label, TextField } from 'react-aria-components';
import { Bar, BarChart, CartesianGrid, Legend, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import { downloadFile } from '../api';
import { ChoiceSelect } from '../components/ChoiceSelect';
import { Empty, ErrorState, Loading } from '../components/States';
import { useSignedIn } from '../session';
import { credits, PRODUCT_KEYS, usageQuery, useCredits, useUsage, type UsageDaily, type UsageFilter, type UsageRow } from '../tenant-queries';

const STATUSES = ['pending', 'succeeded', 'failed', 'abandoned'] as const;
const COLOURS = ['#2450c7', '#d9480f', '#2b8a3e', '#862e9c', '#c2255c', '#1098ad', '#5c940d', '#e67700'];

/**
 * The prices a row was charged at, in credits per 1,000 tokens (input / cached input / output); "—"
 * on rows from before prices were recorded. Cached input is shown only when the model had a price for it.
 */
export function pricesText(r: UsageRow): string {
  if (r.inputPer1k === null || r.outputPer1k === null) return '—';
  const cached = r.cachedInputPer1k === null ? '' : ` / ${credits(r.cachedInputPer1k)} cached`;
  return `${credits(r.inputPer1k)} in${cached} / ${credits(r.outputPer1k)} out`;
}

/** Requests per day, one series per product key and model, for the chart (GET /api/usage/daily's groups). */
export function byDay(groups: UsageDaily['days']): { series: string[]; data: Record<string, string | number>[] } {
  const days = new Map<string, Record<string, string | number>>();
  const series = new Set<string>();
  for (const g of groups) {
    const name = `${g.productKey} · ${g.model}`;
    series.add(name);
    const d = days.get(g.day) ?? { day: g.day };
    d[name] = Number(d[name] ?? 0) + g.requests;
    days.set(g.day, d);
  }
  return { series: [...series].sort(), data: [...days.values()].sort((a, b) => String(a['day']).localeCompare(String(b['day']))) };
}

const DAY_MS = 86_400_000;
const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/**
 * The export's range (the API requires both ends, at most 366 days apart): the filter's dates, an
 * open end filled in, by default the last 30 days through today (`to` is exclusive, so tomorrow).
 */
export function exportRange(from: string, to: string, now = Date.now()): { from: string; to: string } {
  const end = to || isoDay(now + DAY_MS);
  return { from: from || isoDay(Date.parse(end) - 30 * DAY_MS), to: end };
}

type Draft = Required<Record<keyof UsageFilter, string>>;
const EMPTY: Draft = { from: '', to: '', productKey: '', status: '', model: '', clientRequestId: '' };

function Filters({ initial, onApply }: { initial: Draft; onApply: (d: Draft) => void }) {
  const [d, setD] = useState<Draft>(initial);
  const set = (k: keyof Draft) => (v: string) => setD((x) => ({ ...x, [k]: v }));
  return (
    <Form
      aria-label="Usage filters"
      className="react-aria-Form filters"
      onSubmit={(e) => {
        e.preventDefault();
        onApply(d);
      }}
    >
      <TextField value={d.from} onChange={set('from')} type="date">
        <Label>From</Label>
        <Input />
      </TextField>
      <TextField value={d.to} onChange={set('to')} type="date">
        <Label>To (exclusive)</Label>
        <Input />
      </TextField>
      <ChoiceSelect label="Product" value={d.productKey || 'any'} options={[{ id: 'any', name: 'any' }, ...PRODUCT_KEYS.map((k) => ({ id: k, name: k }))]} onChange={(v) => set('productKey')(v === 'any' ? '' : v)} />
      <ChoiceSelect label="Status" value={d.status || 'any'} options={[{ id: 'any', name: 'any' }, ...STATUSES.map((k) => ({ id: k, name: k }))]} onChange={(v) => set('status')(v === 'any' ? '' : v)} />
      <TextField value={d.model} onChange={set('model')}>
        <Label>Model</Label>
        <Input />
      </TextField>
      {/* The x-request-id a product backend sent with its gateway request: what that request was charged. */}
      <TextField value={d.clientRequestId} onChange={set('clientRequestId')}>
        <Label>Your request id</Label>
        <Input />
      </TextField>
      <div className="actions">
        <Button type="submit" className="primary">
          Apply filters
        </Button>
        <Button
          onPress={() => {
            setD(EMPTY);
            onApply(EMPTY);
          }}
        >
          Clear
        </Button>
      </div>
    </Form>
  );
}

export function Usage() {
  const { scope } = useSignedIn();
  const [filter, setFilter] = useState<Draft>(EMPTY);
  const f: UsageFilter = { ...filter, status: (filter.status || undefined) as UsageFilter['status'] };
  const { rows, summary, daily } = useUsage(scope, f);
  const balance = useCredits(scope);
  const chart = useMemo(() => byDay(daily.data?.days ?? []), [daily.data]);
  const range = exportRange(filter.from, filter.to);
  // The server writes the file page by page (GET /api/usage/export): any size of range, the same filter.
  const csv = useMutation({
    mutationFn: () => downloadFile(`/api/usage/export?${usageQuery({ ...f, ...range })}&format=csv`, { ...scope, environment: undefined }, 'text/csv'),
  });
  return (
    <section aria-labelledby="usage-title">
      <h1 id="usage-title">AI usage</h1>
      <div className="cards">
        {balance.isPending && <Loading what="credit balance" />}
        {balance.error && <ErrorState error={balance.error} />}
        {balance.data && (
          <>
            <div className="card">
              <span className="muted">Credit balance</span>
              <strong data-testid="credit-balance">{credits(balance.data.balance)}</strong>
            </div>
            <div className="card">
              <span className="muted">Held by requests in flight</span>
              <strong data-testid="credit-reserved">{credits(balance.data.reserved)}</strong>
            </div>
          </>
        )}
        {summary.data && (
          <>
            <div className="card">
              <span className="muted">Requests (filter)</span>
              <strong data-testid="usage-requests">{summary.data.totals.requests.toLocaleString()}</strong>
            </div>
            <div className="card">
              <span className="muted">Tokens in / out</span>
              <strong>
                {summary.data.totals.inputTokens.toLocaleString()} / {summary.data.totals.outputTokens.toLocaleString()}
              </strong>
            </div>
            <div className="card">
              <span className="muted">Debited credits</span>
              <strong>{credits(summary.data.totals.debit)}</strong>
            </div>
          </>
        )}
      </div>
      <div className="panel">
        <h2>Filters</h2>
        <Filters initial={filter} onApply={setFilter} />
      </div>
      {(rows.isPending || summary.isPending) && <Loading what="usage" />}
      {rows.error && <ErrorState error={rows.error} onRetry={() => void rows.refetch()} hint="AI usage is shown to admins of the tenant." />}
      {rows.data && rows.data.length === 0 && <Empty>No AI gateway requests match these filters.</Empty>}
      {rows.data && rows.data.length > 0 && (
        <>
          <div className="panel">
            <h2 id="chart-title">Requests per day by product and model</h2>
            <figure className="chart" aria-labelledby="chart-title">
              <ResponsiveContainer width="100%" height={260}>
                <BarChart data={chart.data} accessibilityLayer>
                  <CartesianGrid strokeDasharray="3 3" />
                  <XAxis dataKey="day" />
                  <YAxis allowDecimals={false} />
                  <Tooltip />
                  <Legend />
                  {chart.series.map((s, i) => (
                    <Bar key={s} dataKey={s} stackId="requests" fill={COLOURS[i % COLOURS.length]} isAnimationActive={false} />
                  ))}
                </BarChart>
              </ResponsiveContainer>
            </figure>
            {summary.data && (
              <table>
                <caption>By product and model</caption>
                <thead>
                  <tr>
                    <th scope="col">Product</th>
                    <th scope="col">Model</th>
                    <th scope="col">Requests</th>
                    <th scope="col">Input tokens</th>
                    <th scope="col">Output tokens</th>
                    <th scope="col">Debited credits</th>
                  </tr>
                </thead>
                <tbody>
                  {summary.data.byProductAndModel.map((g) => (
                    <tr key={`${g.productKey}/${g.model}`}>
                      <td>{g.productKey}</td>
                      <td>{g.model}</td>
                      <td>{g.requests}</td>
                      <td>{g.inputTokens}</td>
                      <td>{g.outputTokens}</td>
                      <td>{credits(g.debit)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </div>
          <div className="panel">
            <div className="page-head">
              <h2>Ledger</h2>
              <Button onPress={() => csv.mutate()} isDisabled={csv.isPending}>
                Export CSV
              </Button>
            </div>
            <p className="muted">
              Exports every row of the filter from {range.from} to {range.to} (exclusive), oldest first; at most 366 days at a time.
            </p>
            <p role="status" className="muted">
              {csv.isPending ? 'Preparing the CSV…' : csv.data !== undefined ? `Downloaded ${csv.data.filename} (${Math.max(1, Math.round(csv.data.bytes / 1024)).toLocaleString()} KB).` : ''}
            </p>
            {csv.error && <ErrorState error={csv.error} />}
            {/* Wide (ten columns): it scrolls inside the panel rather than out of it. Focusable, so a keyboard can scroll it. */}
            <div className="table-scroll" role="region" aria-label="Ledger rows" tabIndex={0}>
              <table data-testid="ledger">
                <caption className="visually-hidden">Ledger rows, newest first</caption>
                <thead>
                  <tr>
                    <th scope="col">Time</th>
                    <th scope="col">Product</th>
                    <th scope="col">Model</th>
                    <th scope="col">Status</th>
                    <th scope="col">Tokens in / out</th>
                    <th scope="col">Debit</th>
                    <th scope="col">Prices per 1k tokens</th>
                    <th scope="col">Client</th>
                    <th scope="col">Request id</th>
                  </tr>
                </thead>
                <tbody>
                  {rows.data.map((r) => (
                    <tr key={r.id}>
                      <td>{new Date(r.createdAt).toLocaleString()}</td>
                      <td>{r.productKey}</td>
                      <td>{r.model}</td>
                      <td>
                        {r.status}
                        {r.errorCode ? ` (${r.errorCode})` : ''}
                      </td>
                      <td>
                        {r.inputTokens} / {r.outputTokens}
                        {r.cachedTokens > 0 ? ` (${r.cachedTokens} cached)` : ''}
                      </td>
                      <td>{r.zeroRated ? `0 (zero-rated${r.zeroRatedReason ? `: ${r.zeroRatedReason}` : ''})` : credits(r.debit)}</td>
                      <td>{pricesText(r)}</td>
                      <td>
                        <code>{r.clientId}</code>
                      </td>
                      <td>
                        <code>{r.requestId ?? '—'}</code>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          </div>
        </>
      )}
    </section>
  );
}

export default Usage;
