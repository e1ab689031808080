import Stripe from 'stripe';
import { planOfPrice, planPriceId, planPrices } from './plans';
import { isDuplicateMeterEvent, isStripeUnavailable, scopedIdempotencyKey, StripeApi, StripeNotConfiguredError } from './stripe-api';
import { stripeSecretsFromConfig } from './stripe.env';

const secrets = (values: Record<string, string>) => ({ get: (name: string) => values[name] });

describe('plans and prices', () => {
  const s = secrets({ STRIPE_PRICE_FREE: 'price_f', STRIPE_PRICE_PREMIUM: 'price_p' });

  it('maps plans to configured prices and back, skipping unconfigured plans', () => {
    expect(planPriceId(s, 'premium')).toBe('price_p');
    expect(planPriceId(s, 'standard')).toBeUndefined();
    expect(planPrices(s)).toEqual([
      { plan: 'free', priceId: 'price_f' },
      { plan: 'premium', priceId: 'price_p' },
    ]);
    expect(planOfPrice(s, 'price_p')).toBe('premium');
    expect(planOfPrice(s, 'price_other')).toBeUndefined();
    expect(planOfPrice(s, null)).toBeUndefined();
  });

  it('picks only the set Stripe secrets out of a config', () => {
    expect(stripeSecretsFromConfig({ STRIPE_SECRET_KEY: 'sk', STRIPE_WEBHOOK_SECRET: '' })).toEqual({ STRIPE_SECRET_KEY: 'sk' });
  });
});

describe('StripeApi', () => {
  it('refuses to build a client without a key, and builds a new one when the key rotates', () => {
    const values: Record<string, string> = {};
    const api = new StripeApi(secrets(values), { apiBase: 'http://127.0.0.1:12111' });
    expect(api.configured).toBe(false);
    expect(() => api.client()).toThrow(StripeNotConfiguredError);
    values['STRIPE_SECRET_KEY'] = 'sk_test_one';
    const one = api.client();
    expect(api.client()).toBe(one);
    values['STRIPE_SECRET_KEY'] = 'sk_test_two';
    expect(api.client()).not.toBe(one);
  });

  it('tells an unavailable Stripe (retry later) from a refusal', () => {
    expect(isStripeUnavailable(new Stripe.errors.StripeConnectionError({ message: 'refused' }))).toBe(true);
    expect(isStripeUnavailable(new Stripe.errors.StripeAPIError({ type: 'api_error', message: 'm', statusCode: 500 }))).toBe(true);
    expect(isStripeUnavailable(new Stripe.errors.StripeRateLimitError({ type: 'rate_limit_error', message: 'm', statusCode: 429 }))).toBe(true);
    expect(isStripeUnavailable(new Stripe.errors.StripeAuthenticationError({ type: 'authentication_error', message: 'm', statusCode: 401 }))).toBe(true);
    expect(isStripeUnavailable(new StripeNotConfiguredError('none'))).toBe(true);
    expect(isStripeUnavailable(new Stripe.errors.StripeInvalidRequestError({ type: 'invalid_request_error', message: 'm', statusCode: 400 }))).toBe(false);
    expect(isStripeUnavailable(new Error('other'))).toBe(false);
  });

  it('counts a meter event refused for its identifier as delivered, and nothing else', () => {
    const dup = new Stripe.errors.StripeInvalidRequestError({ type: 'invalid_request_error', code: 'resource_already_exists', message: 'An event already exists with identifier x.', statusCode: 400 });
    const other = new Stripe.errors.StripeInvalidRequestError({ type: 'invalid_request_error', message: 'Timestamp must be within the past 35 calendar days.', statusCode: 400 });
    expect(isDuplicateMeterEvent(dup)).toBe(true);
    expect(isDuplicateMeterEvent(other)).toBe(false);
    expect(isDuplicateMeterEvent(new Error('already exists with identifier'))).toBe(false);
  });
});

describe('scopedIdempotencyKey', () => {
  it("scopes a caller's key, hashes one that would pass Stripe's 255 characters, and passes none on when there is none", () => {
    expect(scopedIdempotencyKey('flagship-portal-t1', 'order-42')).toEqual({ idempotencyKey: 'flagship-portal-t1-order-42' });
    expect(scopedIdempotencyKey('flagship-portal-t1', undefined)).toEqual({});
    const long = scopedIdempotencyKey('flagship-portal-t1', 'x'.repeat(255)).idempotencyKey!;
    expect(long).toMatch(/^flagship-portal-t1-sha256-[0-9a-f]{64}$/);
    expect(scopedIdempotencyKey('flagship-portal-t1', 'x'.repeat(255)).idempotencyKey).toBe(long);
    expect(scopedIdempotencyKey('flagship-portal-t1', 'y'.repeat(255)).idempotencyKey).not.toBe(long);
    const edge = 'z'.repeat(255 - 'flagship-portal-t1-'.length);
    expect(scopedIdempotencyKey('flagship-portal-t1', edge).idempotencyKey).toBe(`flagship-portal-t1-${edge}`);
  });
});
