import type { ReserveOutcome } from '@flagship/ledger';
import { DIALECTS } from '../dialects/dialects';
import { GatewayError } from '../gateway.errors';
import { FakeUsageLedgerRepository } from '@flagship/ledger/testing';
import { aReservation } from '../testing/reservation.fixture';
import type { Reservation } from './ledger.types';
import { ReservationStep } from './reservation.step';

const TENANT = 't-1';
const BILLING = 'https://console.example.test/billing';

/** What the handler asks to reserve (the reservation less the id the step chooses). */
const ask = (over: Partial<Reservation> = {}): Omit<Reservation, 'id'> => {
  const { id: _id, ...rest } = aReservation(over);
  return rest;
};

async function refusal(step: ReservationStep, request = ask()): Promise<GatewayError> {
  const err: unknown = await step.reserve(request).then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof GatewayError)) throw new Error(`expected a GatewayError, got ${String(err)}`);
  return err;
}

describe("ReservationStep: admission's outcome as the caller's answer", () => {
  let ledger: FakeUsageLedgerRepository;
  let step: ReservationStep;

  beforeEach(() => {
    ledger = new FakeUsageLedgerRepository().tenant(TENANT, 5000);
    step = new ReservationStep(ledger, BILLING);
  });

  it('admitted: the reservation with its id, its row pending and its estimate held', async () => {
    const r = await step.reserve(ask());
    expect(r).toEqual({ ...ask(), id: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    expect(ledger.rows.get(r.id)).toMatchObject({ status: 'pending', reserved: 1000 });
    expect(ledger.balances.get(TENANT)).toEqual({ balance: 5000, reserved: 1000 });
  });

  it('a zero-rated request is admitted whatever the credit, holding nothing', async () => {
    ledger.tenant(TENANT, 0);
    const r = await step.reserve(ask({ estimate: 0, zeroRatedReason: 'zero_rated_tenant' }));
    expect(ledger.rows.get(r.id)).toMatchObject({ status: 'pending', reserved: 0 });
  });

  it('the requests of one turn are admitted in one call', async () => {
    await Promise.all([step.reserve(ask()), step.reserve(ask()), step.reserve(ask())]);
    expect(ledger.calls).toEqual([{ method: 'admit', size: 3 }]);
  });

  it('insufficient_credits: 402 insufficient_credits naming the billing page; the credit held by others counts', async () => {
    await step.reserve(ask({ estimate: 4500 }));
    const err = await refusal(step);
    expect(err).toMatchObject({ status: 402, code: 'insufficient_credits', param: null });
    expect(err.message).toContain(BILLING);
    expect(ledger.rows.size).toBe(1);
  });

  it('budget_client: 402 budget_exceeded naming the OAuth client', async () => {
    ledger.budget(TENANT, 'client', 'client-1', 999);
    const err = await refusal(step);
    expect(err).toMatchObject({ status: 402, code: 'budget_exceeded' });
    expect(err.message).toContain("This month's budget of OAuth client client-1 does not cover");
    expect(err.message).toContain(BILLING);
  });

  it('budget_product: 402 budget_exceeded naming the product key', async () => {
    ledger.budget(TENANT, 'product', 'core', 999);
    const err = await refusal(step);
    expect(err).toMatchObject({ status: 402, code: 'budget_exceeded' });
    expect(err.message).toContain("This month's budget of product key core does not cover");
  });

  it('unavailable (its statement failed after others of its batch were admitted): 503 with Retry-After', async () => {
    ledger.scripted.push('unavailable');
    expect(await refusal(step)).toMatchObject({ status: 503, code: 'service_unavailable', headers: { 'retry-after': '1' } });
  });

  it('a ledger that cannot be reached: 503 with Retry-After, nothing held', async () => {
    ledger.failNext('admit');
    expect(await refusal(step)).toMatchObject({ status: 503, code: 'service_unavailable', headers: { 'retry-after': '1' } });
    expect(ledger.balances.get(TENANT)).toEqual({ balance: 5000, reserved: 0 });
  });

  it('the "upstream called" stamp marks the row, and rejects when the ledger cannot be reached (the answer is then withheld)', async () => {
    const r = await step.reserve(ask());
    await step.upstreamCalled(r);
    expect(ledger.rows.get(r.id)!.upstreamCalled).toBe(true);
    ledger.failNext('markUpstreamCalled');
    const other = await step.reserve(ask());
    await expect(step.upstreamCalled(other)).rejects.toThrow();
    expect(ledger.rows.get(other.id)!.upstreamCalled).toBe(false);
  });

  describe("each refusal in each API's error body", () => {
    const refusals: Array<[ReserveOutcome, () => void]> = [
      ['insufficient_credits', () => ledger.tenant(TENANT, 10)],
      ['budget_client', () => ledger.budget(TENANT, 'client', 'client-1', 10)],
      ['unavailable', () => ledger.scripted.push('unavailable')],
    ];
    const openAi: Record<string, { status: number; type: string; code: string }> = {
      insufficient_credits: { status: 402, type: 'insufficient_quota', code: 'insufficient_credits' },
      budget_client: { status: 402, type: 'insufficient_quota', code: 'budget_exceeded' },
      unavailable: { status: 503, type: 'server_error', code: 'service_unavailable' },
    };
    const anthropic: Record<string, string> = { insufficient_credits: 'billing_error', budget_client: 'billing_error', unavailable: 'overloaded_error' };

    it.each(refusals)('%s', async (outcome, arrange) => {
      arrange();
      const err = await refusal(step);
      expect(err.status).toBe(openAi[outcome]!.status);
      for (const dialect of DIALECTS) {
        const body: unknown = JSON.parse(dialect.error({ status: err.status, code: err.code, message: err.message, param: err.param }, 'req-1'));
        if (dialect.route === 'messages') {
          expect(body).toEqual({ type: 'error', error: { type: anthropic[outcome], message: err.message }, request_id: 'req-1' });
        } else {
          expect(body).toEqual({ error: { message: err.message, type: openAi[outcome]!.type, code: openAi[outcome]!.code, param: null } });
        }
      }
    });
  });
});
