import { type PurchaseState, reversalOf } from './credit-reversal';

/** $25.00 bought 250,000,000 micro-credits (10,000 per cent). */
const PURCHASE: PurchaseState = { amount: 2500, credits: 250_000_000, creditsTakenBack: 0 };
const after = (p: PurchaseState, r: { creditsTakenBack: number }): PurchaseState => ({ ...p, creditsTakenBack: r.creditsTakenBack });

describe('reversalOf: what a refunded or disputed credit purchase takes back', () => {
  it('a full refund takes back every credit granted', () => {
    expect(reversalOf(PURCHASE, { amountRefunded: 2500, disputes: [] })).toEqual({
      amountRefunded: 2500,
      amountDisputed: 0,
      creditsTakenBack: 250_000_000,
      change: 250_000_000,
      disputeOpen: false,
    });
  });

  it('a partial refund takes back the proportional credits, rounded down (in the tenant\'s favour, by less than one micro-credit)', () => {
    expect(reversalOf(PURCHASE, { amountRefunded: 1000, disputes: [] })).toMatchObject({ creditsTakenBack: 100_000_000, change: 100_000_000 });
    // 1000 micro-credits for 3 cents: one cent refunded is 333.33..., 333 taken back; all three, all 1000.
    const odd: PurchaseState = { amount: 3, credits: 1000, creditsTakenBack: 0 };
    expect(reversalOf(odd, { amountRefunded: 1, disputes: [] }).change).toBe(333);
    expect(reversalOf(odd, { amountRefunded: 2, disputes: [] }).change).toBe(666);
    expect(reversalOf(odd, { amountRefunded: 3, disputes: [] }).change).toBe(1000);
  });

  it("a second refund event takes back only the difference (Stripe's amount_refunded is cumulative); the same event twice moves nothing", () => {
    const first = reversalOf(PURCHASE, { amountRefunded: 1000, disputes: [] });
    const second = reversalOf(after(PURCHASE, first), { amountRefunded: 1500, disputes: [] });
    expect([first.change, second.change, second.creditsTakenBack]).toEqual([100_000_000, 50_000_000, 150_000_000]);
    expect(reversalOf(after(PURCHASE, second), { amountRefunded: 1500, disputes: [] }).change).toBe(0);
    // Two refunds of one cent each, rounded down one at a time, still end exactly at the total.
    const odd: PurchaseState = { amount: 3, credits: 1000, creditsTakenBack: 0 };
    const a = reversalOf(odd, { amountRefunded: 1, disputes: [] });
    const b = reversalOf(after(odd, a), { amountRefunded: 2, disputes: [] });
    const c = reversalOf(after(odd, b), { amountRefunded: 3, disputes: [] });
    expect([a.change, b.change, c.change, a.change + b.change + c.change]).toEqual([333, 333, 334, 1000]);
  });

  it('an open dispute takes back its share and pauses; won gives it back and unpauses; lost keeps it and unpauses', () => {
    const open = reversalOf(PURCHASE, { amountRefunded: 0, disputes: [{ amount: 2500, status: 'needs_response' }] });
    expect(open).toMatchObject({ amountDisputed: 2500, creditsTakenBack: 250_000_000, change: 250_000_000, disputeOpen: true });
    expect(reversalOf(after(PURCHASE, open), { amountRefunded: 0, disputes: [{ amount: 2500, status: 'under_review' }] })).toMatchObject({ change: 0, disputeOpen: true });
    const won = reversalOf(after(PURCHASE, open), { amountRefunded: 0, disputes: [{ amount: 2500, status: 'won' }] });
    expect(won).toMatchObject({ amountDisputed: 0, creditsTakenBack: 0, change: -250_000_000, disputeOpen: false });
    const lost = reversalOf(after(PURCHASE, open), { amountRefunded: 0, disputes: [{ amount: 2500, status: 'lost' }] });
    expect(lost).toMatchObject({ amountDisputed: 2500, creditsTakenBack: 250_000_000, change: 0, disputeOpen: false });
  });

  it('an inquiry holds its amount while open and gives it back when closed; a status Stripe adds later counts as open', () => {
    const inquiry = reversalOf(PURCHASE, { amountRefunded: 0, disputes: [{ amount: 500, status: 'warning_needs_response' }] });
    expect(inquiry).toMatchObject({ creditsTakenBack: 50_000_000, disputeOpen: true });
    expect(reversalOf(after(PURCHASE, inquiry), { amountRefunded: 0, disputes: [{ amount: 500, status: 'warning_closed' }] })).toMatchObject({ change: -50_000_000, disputeOpen: false });
    expect(reversalOf(PURCHASE, { amountRefunded: 0, disputes: [{ amount: 500, status: 'appeal_under_review' }] })).toMatchObject({ disputeOpen: true, creditsTakenBack: 50_000_000 });
  });

  it('refunds and disputes together never take back more than was paid', () => {
    const both = reversalOf(PURCHASE, { amountRefunded: 2000, disputes: [{ amount: 2500, status: 'lost' }] });
    expect(both).toMatchObject({ amountRefunded: 2000, amountDisputed: 2500, creditsTakenBack: 250_000_000 });
    // Part refunded first, the rest disputed and won: only the refund stays taken back.
    const partly = reversalOf(PURCHASE, { amountRefunded: 500, disputes: [{ amount: 2000, status: 'needs_response' }] });
    expect(reversalOf(after(PURCHASE, partly), { amountRefunded: 500, disputes: [{ amount: 2000, status: 'won' }] })).toMatchObject({ creditsTakenBack: 50_000_000, change: -200_000_000 });
  });

  it('ignores nonsense from the wire: negative or fractional amounts count as nothing; a purchase of nothing takes back nothing', () => {
    expect(reversalOf(PURCHASE, { amountRefunded: -5, disputes: [{ amount: 1.5, status: 'lost' }] })).toMatchObject({ amountRefunded: 0, amountDisputed: 0, change: 0 });
    expect(reversalOf({ amount: 0, credits: 0, creditsTakenBack: 0 }, { amountRefunded: 100, disputes: [] }).change).toBe(0);
  });

  it('keeps exact integers at the largest purchase (1,000,000 cents at 10,000 micro-credits a cent) and beyond 2^53 in between', () => {
    const big: PurchaseState = { amount: 1_000_000, credits: 10_000_000_000, creditsTakenBack: 0 };
    expect(reversalOf(big, { amountRefunded: 333_333, disputes: [] }).creditsTakenBack).toBe(3_333_330_000);
    const huge: PurchaseState = { amount: 99_999_999, credits: 999_999_990_000, creditsTakenBack: 0 };
    expect(reversalOf(huge, { amountRefunded: 12_345_678, disputes: [] }).creditsTakenBack).toBe(123_456_780_000);
  });
});
