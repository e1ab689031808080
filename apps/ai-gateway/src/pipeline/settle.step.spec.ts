import { Registry } from 'prom-client';
import type { LowBalanceCrossing } from '@flagship/ledger';
import { GatewayError } from '../gateway.errors';
import { GatewayMetrics } from '../gateway.metrics';
import type { Usage } from '../providers/provider.types';
import { FakeUsageLedgerRepository } from '@flagship/ledger/testing';
import { aReservation } from '../testing/reservation.fixture';
import type { Admitted, CallOutcome } from './call-outcome';
import type { Reservation } from './ledger.types';
import { SettleStep, type SettleStepOptions } from './settle.step';

const TENANT = 't-1';

const reservation = aReservation;

const usage = (inputTokens: number, outputTokens: number, estimated = false): Usage => ({ inputTokens, outputTokens, estimated });
const answered = (u: Usage, clientGone = false): CallOutcome => ({ kind: 'answered', provider: 'inhouse', usage: u, upstreamMs: 7, overheadMs: 0.4, clientGone });
const streamed = (u: Usage, end: 'completed' | 'client_gone' | 'upstream_broken' | 'gateway_shutdown'): CallOutcome => ({ kind: 'streamed', provider: 'hosted', usage: u, upstreamMs: 9, overheadMs: 0.3, end });
const failed = (u: Usage, code: string): CallOutcome => ({ kind: 'failed', provider: 'inhouse', usage: u, code, error: new GatewayError(504, 'provider_timeout', 'late') });

/** What admission counted: 500 input tokens at most, 100 output reserved. */
const ADMITTED: Admitted = { inputTokens: 500, outputTokens: 100, stream: false };

describe('SettleStep.complete: a call outcome as the ledger settlement', () => {
  let ledger: FakeUsageLedgerRepository;
  let registry: Registry;
  let crossings: LowBalanceCrossing[][];

  const step = (options: Partial<SettleStepOptions> = {}): SettleStep =>
    new SettleStep(ledger, { onCrossings: (c) => crossings.push(c), metrics: new GatewayMetrics(registry), retryDelayMs: 0, ...options });

  /** A reservation admitted by the fake (its row pending, its estimate held). */
  const admitted = async (over: Partial<Reservation> = {}): Promise<Reservation> => {
    const r = reservation(over);
    expect(await ledger.admit([r])).toEqual(['admitted']);
    return r;
  };

  const counter = async (name: string): Promise<Array<{ value: number; labels: Record<string, unknown> }>> => (await registry.getSingleMetric(name)!.get()).values;

  beforeEach(() => {
    ledger = new FakeUsageLedgerRepository().tenant(TENANT, 1_000_000);
    registry = new Registry();
    crossings = [];
  });

  it.each<[string, CallOutcome, Admitted, { status: string; errorCode: string | null; inputTokens: number; outputTokens: number; debit: number; usageEstimated: boolean; label: string }]>([
    ['an answer', answered(usage(10, 5)), ADMITTED, { status: 'succeeded', errorCode: null, inputTokens: 10, outputTokens: 5, debit: 20, usageEstimated: false, label: 'succeeded' }],
    ['an answer whose caller left (served, paid)', answered(usage(10, 5), true), ADMITTED, { status: 'succeeded', errorCode: 'client_disconnected', inputTokens: 10, outputTokens: 5, debit: 20, usageEstimated: false, label: 'client_gone' }],
    // lostUsage, read whole: the admitted input, the output read.
    ['an answer without usage', answered(usage(3, 7, true)), ADMITTED, { status: 'succeeded', errorCode: null, inputTokens: 500, outputTokens: 7, debit: 514, usageEstimated: true, label: 'succeeded' }],
    ['a refusal relayed', { kind: 'refused', provider: 'inhouse', status: 429, upstreamMs: 3, overheadMs: 0.2 }, ADMITTED, { status: 'failed', errorCode: 'upstream_429', inputTokens: 0, outputTokens: 0, debit: 0, usageEstimated: false, label: 'upstream_refused' }],
    ['a stream to its end', streamed(usage(10, 5), 'completed'), { ...ADMITTED, stream: true }, { status: 'succeeded', errorCode: null, inputTokens: 10, outputTokens: 5, debit: 20, usageEstimated: false, label: 'succeeded' }],
    // lostUsage, read as a stream: what was delivered, not what was reserved.
    ['a stream whose caller left, without usage', streamed(usage(2, 9, true), 'client_gone'), { ...ADMITTED, stream: true }, { status: 'succeeded', errorCode: 'client_disconnected', inputTokens: 500, outputTokens: 9, debit: 518, usageEstimated: true, label: 'client_gone' }],
    ['a stream the upstream broke', streamed(usage(10, 5), 'upstream_broken'), { ...ADMITTED, stream: true }, { status: 'failed', errorCode: 'upstream_broken', inputTokens: 10, outputTokens: 5, debit: 20, usageEstimated: false, label: 'upstream_broken' }],
    ['a stream cut at shutdown', streamed(usage(10, 5), 'gateway_shutdown'), { ...ADMITTED, stream: true }, { status: 'failed', errorCode: 'gateway_shutdown', inputTokens: 10, outputTokens: 5, debit: 20, usageEstimated: false, label: 'gateway_shutdown' }],
    // lostUsage, lost: a non-streamed answer never read is charged the output reserved.
    ['a time-out after sending', failed(usage(1, 4, true), 'provider_timeout'), ADMITTED, { status: 'failed', errorCode: 'provider_timeout', inputTokens: 500, outputTokens: 100, debit: 700, usageEstimated: true, label: 'provider_timeout' }],
    ['a streamed time-out after sending', failed(usage(1, 4, true), 'gateway_shutdown'), { ...ADMITTED, stream: true }, { status: 'failed', errorCode: 'gateway_shutdown', inputTokens: 500, outputTokens: 4, debit: 508, usageEstimated: true, label: 'gateway_shutdown' }],
    ['no provider reachable', failed(usage(0, 0), 'provider_unavailable'), ADMITTED, { status: 'failed', errorCode: 'provider_unavailable', inputTokens: 0, outputTokens: 0, debit: 0, usageEstimated: false, label: 'provider_unavailable' }],
    ['a bug in the step', { kind: 'crashed', provider: 'inhouse', thrown: new TypeError('x') }, ADMITTED, { status: 'failed', errorCode: 'internal_error', inputTokens: 0, outputTokens: 0, debit: 0, usageEstimated: false, label: 'internal_error' }],
  ])('%s', async (_name, outcome, admission, want) => {
    const r = await admitted({ stream: admission.stream });
    const s = step();
    const settlement = s.complete(r, admission, outcome, 12.6);
    const { label, ...row } = want;
    expect(settlement).toEqual({ id: r.id, tenantId: TENANT, cachedTokens: 0, provider: outcome.provider, latencyMs: 13, ...row });
    await s.drain();
    // Written: the row completed, its estimate released and its debit taken.
    expect(ledger.rows.get(r.id)).toMatchObject({ status: want.status, debit: want.debit, settlement });
    expect(ledger.balances.get(TENANT)).toEqual({ balance: 1_000_000 - want.debit, reserved: 0 });
    expect((await counter('gateway_requests_total')).find((v) => v.value === 1)?.labels).toEqual({ product: 'core', provider: outcome.provider, model: 'fake-chat-1', endpoint: 'chat.completions', outcome: label });
  });

  it('gathers settlements for gatherMs and writes them in one statement; none is written before the window closes', async () => {
    const rs = await Promise.all([admitted(), admitted(), admitted()]);
    const s = step({ gatherMs: 40 });
    s.complete(rs[0]!, ADMITTED, answered(usage(10, 5)), 1);
    await new Promise((r) => setTimeout(r, 5));
    s.complete(rs[1]!, ADMITTED, answered(usage(10, 5)), 1);
    s.complete(rs[2]!, ADMITTED, answered(usage(10, 5)), 1);
    await new Promise((r) => setImmediate(r));
    expect(ledger.calls.filter((c) => c.method === 'settleBatch')).toEqual([]);
    await s.drain();
    expect(ledger.calls.filter((c) => c.method === 'settleBatch')).toEqual([{ method: 'settleBatch', size: 3 }]);
    expect(rs.map((r) => ledger.rows.get(r.id)!.status)).toEqual(['succeeded', 'succeeded', 'succeeded']);
  });

  it("charges the reservation's recorded prices: cached input at its cached price", async () => {
    const cachedPriced = await admitted({ cachedInputPer1k: 500 });
    const s = step();
    expect(s.complete(cachedPriced, ADMITTED, answered({ ...usage(1000, 0), cachedTokens: 1000 }), 1)).toMatchObject({ cachedTokens: 1000, debit: 500 });
    // Without a cached price every input token costs the input price.
    const plain = await admitted();
    expect(s.complete(plain, ADMITTED, answered({ ...usage(1000, 0), cachedTokens: 1000 }), 1)).toMatchObject({ cachedTokens: 1000, debit: 1000 });
  });

  it('a zero-rated request is recorded with its tokens and debits nothing', async () => {
    const r = await admitted({ estimate: 0, zeroRatedReason: 'internal_product' });
    const s = step();
    expect(s.complete(r, ADMITTED, answered(usage(10, 5)), 1)).toMatchObject({ inputTokens: 10, outputTokens: 5, debit: 0 });
    await s.drain();
    expect(ledger.balances.get(TENANT)).toEqual({ balance: 1_000_000, reserved: 0 });
    expect(await counter('gateway_debit_microcredits_total')).toEqual([]);
  });

  it('a debit above the reservation is an overrun: counted by how much, and marked on the row', async () => {
    const r = await admitted({ estimate: 1000 });
    const s = step();
    expect(s.complete(r, ADMITTED, answered(usage(600, 300)), 1).debit).toBe(1200);
    await s.drain();
    expect(ledger.rows.get(r.id)!.overrun).toBe(true);
    expect((await counter('gateway_settlement_overruns_total')).map((v) => v.value)).toEqual([1]);
    expect((await counter('gateway_overrun_microcredits_total')).map((v) => v.value)).toEqual([200]);
    // Within the estimate: none.
    s.complete(await admitted({ estimate: 1000 }), ADMITTED, answered(usage(600, 200)), 1);
    expect((await counter('gateway_settlement_overruns_total')).map((v) => v.value)).toEqual([1]);
  });

  it('settlements of one turn are one batch; a low-balance crossing is heard once its batch is past the flush barrier', async () => {
    ledger.alerts.set(TENANT, 1_000_000 - 30);
    const s = step({
      onCrossings: (c) => {
        expect(ledger.calls.at(-1)?.method).toBe('flushBarrier');
        crossings.push(c);
      },
    });
    const [a, b] = [await admitted(), await admitted()];
    s.complete(a, ADMITTED, answered(usage(10, 5)), 1);
    s.complete(b, ADMITTED, answered(usage(10, 5)), 1);
    await s.drain();
    expect(ledger.calls.filter((c) => c.method === 'settleBatch')).toEqual([{ method: 'settleBatch', size: 2 }]);
    expect(crossings).toEqual([[expect.objectContaining({ tenantId: TENANT, threshold: 1_000_000 - 30, balance: 1_000_000 - 40 })]]);
  });

  it('a write that fails is retried until it lands; a barrier that fails retries its batch, which finds it written', async () => {
    const r = await admitted();
    ledger.failNext('settleBatch', 2);
    const s = step();
    s.complete(r, ADMITTED, answered(usage(10, 5)), 1);
    await s.drain();
    expect(ledger.calls.filter((c) => c.method === 'settleBatch')).toHaveLength(3);
    expect(ledger.rows.get(r.id)!.status).toBe('succeeded');

    const again = await admitted();
    ledger.failNext('flushBarrier', 1);
    s.complete(again, ADMITTED, answered(usage(10, 5)), 1);
    await s.drain();
    // Debited once: the retry's row was no longer pending.
    expect(ledger.balances.get(TENANT)).toEqual({ balance: 1_000_000 - 40, reserved: 0 });
  });

  it('gives up after its retries and leaves the row pending for the reconciler, never rejecting', async () => {
    const r = await admitted();
    ledger.failNext('settleBatch', 10);
    const s = step({ retries: 2 });
    s.complete(r, ADMITTED, answered(usage(10, 5)), 1);
    await expect(s.drain()).resolves.toBeUndefined();
    expect(ledger.rows.get(r.id)!.status).toBe('pending');
    expect(ledger.balances.get(TENANT)!.reserved).toBe(1000);
  });

  it('release takes a reservation back (the row gone, its estimate free); a refused reservation needs nothing', async () => {
    const r = await admitted();
    const s = step();
    await s.release(Promise.resolve(r));
    expect(ledger.rows.has(r.id)).toBe(false);
    expect(ledger.balances.get(TENANT)).toEqual({ balance: 1_000_000, reserved: 0 });
    await s.release(Promise.reject(new GatewayError(402, 'insufficient_credits', 'no')));
    expect(ledger.calls.filter((c) => c.method === 'release')).toHaveLength(1);
  });
});
