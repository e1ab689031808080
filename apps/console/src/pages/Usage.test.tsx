import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, beforeEach, describe, expect, it, onTestFinished, vi } from 'vitest';
import { type Answer, renderSignedIn, routeServer } from '../testing';
import type { UsageRow } from '../tenant-queries';
import { byDay, exportRange, pricesText, Usage } from './Usage';

function aRow(over: Partial<UsageRow> = {}): UsageRow {
  return {
    id: 'u-1',
    clientId: 'ffc_abc',
    productKey: 'core',
    provider: 'inhouse',
    requestedProvider: null,
    model: 'fake-chat-1',
    endpoint: 'chat.completions',
    stream: false,
    status: 'succeeded',
    reserved: 20,
    debit: 11,
    zeroRated: false,
    zeroRatedReason: null,
    inputTokens: 3,
    outputTokens: 4,
    cachedTokens: 0,
    inputPer1k: 1000,
    outputPer1k: 2000,
    cachedInputPer1k: null,
    usageEstimated: false,
    overrun: false,
    errorCode: null,
    latencyMs: 12,
    requestId: 'req-1',
    clientRequestId: null,
    createdAt: '2026-11-22T10:00:00.000Z',
    completedAt: '2026-11-22T10:00:00.050Z',
    ...over,
  };
}

const summary = { from: null, to: null, totals: { requests: 2, inputTokens: 6, outputTokens: 8, debit: 22 }, byProductAndModel: [{ productKey: 'core', model: 'fake-chat-1', requests: 2, inputTokens: 6, outputTokens: 8, debit: 22 }] };
const daily = { from: null, to: null, days: [{ day: '2026-11-22', productKey: 'core', model: 'fake-chat-1', requests: 2, inputTokens: 6, outputTokens: 8, debit: 22 }] };

describe('AI usage', () => {
  let csvs: string[];
  beforeEach(() => {
    // jsdom has neither a layout (recharts measures its box) nor object URLs (the CSV download).
    vi.stubGlobal(
      'ResizeObserver',
      class {
        observe() {}
        unobserve() {}
        disconnect() {}
      },
    );
    csvs = [];
    URL.createObjectURL = vi.fn((b: Blob) => {
      const reader = new FileReader();
      reader.onload = () => csvs.push(String(reader.result));
      reader.readAsText(b);
      return 'blob:usage';
    });
    URL.revokeObjectURL = vi.fn();
    HTMLAnchorElement.prototype.click = vi.fn();
  });
  afterEach(() => vi.unstubAllGlobals());

  it('sends the filters to both usage endpoints and downloads the server\'s export of the same filter', async () => {
    const page1 = [aRow({ id: 'u-2', requestId: 'req-2', createdAt: '2026-11-22T11:00:00.000Z', cachedTokens: 2, cachedInputPer1k: 500 })];
    const page2 = [aRow({ id: 'u-1', requestId: 'req-1', model: 'fake=chat', errorCode: 'provider_error, "late"', status: 'failed' })];
    const file = 'id,created_at\r\nu-1,2026-11-22T10:00:00.000Z\r\n';
    const sent = routeServer((req): Answer | undefined => {
      if (req.url === '/api/billing/credits') return { status: 200, body: { balance: 2_500_000, reserved: 11 } };
      if (req.url.startsWith('/api/usage/summary')) return { status: 200, body: summary };
      if (req.url.startsWith('/api/usage/export?')) {
        return { status: 200, body: undefined, text: file, headers: { 'Content-Type': 'text/csv; charset=utf-8', 'Content-Disposition': 'attachment; filename="usage-20261101T000000Z-20261201T000000Z.csv"' } };
      }
      if (req.url.startsWith('/api/usage/daily')) return { status: 200, body: daily };
      if (req.url.startsWith('/api/usage?')) {
        const u = new URL(req.url, 'http://x');
        if (u.searchParams.get('cursor') === 'c2') return { status: 200, body: page2 };
        return { status: 200, body: page1, headers: { Link: `</api/usage?${u.searchParams.toString()}&cursor=c2>; rel="next"` } };
      }
      return undefined;
    });
    renderSignedIn(<Usage />);
    expect(await screen.findByTestId('credit-balance')).toHaveTextContent('2.5');
    await screen.findByRole('table', { name: 'By product and model' });

    await userEvent.type(screen.getByLabelText('From'), '2026-11-01');
    await userEvent.type(screen.getByLabelText('To (exclusive)'), '2026-12-01');
    await userEvent.click(screen.getByRole('button', { name: /Product/ }));
    await userEvent.click(await screen.findByRole('option', { name: 'core' }));
    await userEvent.click(screen.getByRole('button', { name: /Status/ }));
    await userEvent.click(await screen.findByRole('option', { name: 'failed' }));
    await userEvent.type(screen.getByRole('textbox', { name: 'Model' }), 'fake-chat-1');
    await userEvent.type(screen.getByRole('textbox', { name: 'Your request id' }), 'order:42');
    await userEvent.click(screen.getByRole('button', { name: 'Apply filters' }));

    const expected = 'from=2026-11-01&to=2026-12-01&productKey=core&status=failed&model=fake-chat-1&clientRequestId=order%3A42';
    await waitFor(() => expect(sent.map((r) => r.url)).toContain(`/api/usage/summary?${expected}`));
    await waitFor(() => expect(sent.map((r) => r.url)).toContain(`/api/usage/daily?${expected}`));
    expect(sent.map((r) => r.url)).toContain(`/api/usage?limit=1000&${expected}`);
    expect(sent.find((r) => r.url.startsWith('/api/usage'))?.headers).toMatchObject({ 'X-Tenant-ID': 't-1', Authorization: 'Bearer id-token' });

    await screen.findByText(/from 2026-11-01 to 2026-12-01 \(exclusive\)/);
    await userEvent.click(await screen.findByRole('button', { name: 'Export CSV' }));
    await screen.findByText('Downloaded usage-20261101T000000Z-20261201T000000Z.csv (1 KB).');
    const exported = sent.find((r) => r.url.startsWith('/api/usage/export?'));
    expect(exported?.url).toBe(`/api/usage/export?${expected}&format=csv`);
    expect(exported?.headers).toMatchObject({ 'X-Tenant-ID': 't-1', Authorization: 'Bearer id-token' });
    await waitFor(() => expect(csvs).toEqual([file]));
    expect(HTMLAnchorElement.prototype.click).toHaveBeenCalledTimes(1);
    const ledger = screen.getByTestId('ledger');
    expect(within(ledger).getByText('req-2')).toBeInTheDocument();
    expect(within(ledger).getByText('3 / 4 (2 cached)')).toBeInTheDocument();
    expect(within(ledger).getByRole('columnheader', { name: 'Prices per 1k tokens' })).toBeInTheDocument();
  }, 20_000);

  it('shows an empty state, and a 429 retried once after its Retry-After, then with when to retry', async () => {
    const limitedAt: number[] = [];
    routeServer((req) => {
      if (req.url === '/api/billing/credits') return { status: 200, body: { balance: 0, reserved: 0 } };
      if (req.url.startsWith('/api/usage/summary')) return { status: 200, body: { ...summary, totals: { requests: 0, inputTokens: 0, outputTokens: 0, debit: 0 }, byProductAndModel: [] } };
      if (req.url.startsWith('/api/usage/daily')) return { status: 200, body: { ...daily, days: [] } };
      if (req.url.startsWith('/api/usage?')) {
        if (!req.url.includes('model=')) return { status: 200, body: [] };
        limitedAt.push(Date.now());
        return { status: 429, body: { title: 'Too Many Requests', status: 429, detail: 'Rate limit exceeded; try again later.', instance: 'req-429' }, headers: { 'Retry-After': '7' } };
      }
      return undefined;
    });
    renderSignedIn(<Usage />);
    await screen.findByText('No AI gateway requests match these filters.');
    await userEvent.type(screen.getByRole('textbox', { name: 'Model' }), 'x');
    // The query client waits the advertised 7 s before its one retry: a fake clock (which also runs at
    // real speed, for Testing Library's polling) shows that wait without spending it.
    vi.useFakeTimers({ shouldAdvanceTime: true });
    onTestFinished(() => void vi.useRealTimers());
    await userEvent.click(screen.getByRole('button', { name: 'Apply filters' }));
    await waitFor(() => expect(limitedAt).toHaveLength(1));
    for (let s = 0; s < 10 && limitedAt.length < 2; s++) await vi.advanceTimersByTimeAsync(1_000);
    expect(limitedAt).toHaveLength(2);
    expect(limitedAt[1]! - limitedAt[0]!).toBeGreaterThanOrEqual(7_000);
    const alert = await screen.findByRole('alert');
    expect(alert).toHaveTextContent('Try again in 7 seconds');
    expect(alert).toHaveTextContent('req-429');
  });

  it('shows the prices each row was charged at and its cached tokens', () => {
    const cachedRow = aRow({ inputTokens: 1000, cachedTokens: 600, inputPer1k: 150, outputPer1k: 600, cachedInputPer1k: 75 });
    expect(pricesText(cachedRow)).toBe(`${(0.00015).toLocaleString(undefined, { maximumFractionDigits: 6 })} in / ${(0.000075).toLocaleString(undefined, { maximumFractionDigits: 6 })} cached / ${(0.0006).toLocaleString(undefined, { maximumFractionDigits: 6 })} out`);
    expect(pricesText(aRow())).not.toContain('cached');
    expect(pricesText(aRow({ inputPer1k: null, outputPer1k: null }))).toBe('—');
  });

  it('exports the filter\'s range, an open end filled in: by default the last 30 days through today', () => {
    const now = Date.parse('2026-11-29T09:30:00Z');
    expect(exportRange('', '', now)).toEqual({ from: '2026-10-31', to: '2026-11-30' });
    expect(exportRange('2026-01-01', '', now)).toEqual({ from: '2026-01-01', to: '2026-11-30' });
    expect(exportRange('', '2026-03-01', now)).toEqual({ from: '2026-01-30', to: '2026-03-01' });
    expect(exportRange('2026-02-01', '2026-03-01', now)).toEqual({ from: '2026-02-01', to: '2026-03-01' });
  });

  it('shows the export\'s refusal (a range over 366 days) with its detail', async () => {
    routeServer((req) => {
      if (req.url === '/api/billing/credits') return { status: 200, body: { balance: 0, reserved: 0 } };
      if (req.url.startsWith('/api/usage/summary')) return { status: 200, body: summary };
      if (req.url.startsWith('/api/usage/export?')) {
        return { status: 422, body: { type: '/problems/validation-failed', title: 'Validation failed', status: 422, detail: 'An export covers at most 366 days: split the range.', errors: { to: 'must be at most 366 days after from' } } };
      }
      if (req.url.startsWith('/api/usage?')) return { status: 200, body: [aRow()] };
      return undefined;
    });
    renderSignedIn(<Usage />);
    await userEvent.click(await screen.findByRole('button', { name: 'Export CSV' }));
    expect(await screen.findByRole('alert')).toHaveTextContent('An export covers at most 366 days: split the range.');
    expect(csvs).toEqual([]);
  });

  it('the chart counts requests per day per product and model (the daily groups)', () => {
    const group = { productKey: 'core', model: 'fake-chat-1', requests: 2, inputTokens: 6, outputTokens: 8, debit: 22 };
    const chart = byDay([
      { day: '2026-11-22', ...group },
      { day: '2026-11-23', ...group, productKey: 'insights', requests: 1 },
    ]);
    expect(chart.series).toEqual(['core · fake-chat-1', 'insights · fake-chat-1']);
    expect(chart.data).toEqual([
      { day: '2026-11-22', 'core · fake-chat-1': 2 },
      { day: '2026-11-23', 'insights · fake-chat-1': 1 },
    ]);
  });
});
