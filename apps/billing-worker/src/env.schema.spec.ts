import { ConfigError } from '@flagship/config';
import { loadBillingWorkerConfig } from './env.schema';

describe('billing-worker configuration', () => {
  it('defaults the usage reconciler to rows pending for 10 minutes, checked every minute, 500 per batch', () => {
    const c = loadBillingWorkerConfig({});
    expect([c.RECONCILE_PENDING_AFTER_S, c.RECONCILE_INTERVAL_S, c.RECONCILE_BATCH_SIZE, c.PORT]).toEqual([600, 60, 500, 3002]);
    expect(loadBillingWorkerConfig({ RECONCILE_PENDING_AFTER_S: '900', RECONCILE_INTERVAL_S: ' 5 ' }).RECONCILE_PENDING_AFTER_S).toBe(900);
  });

  it.each([
    ['RECONCILE_PENDING_AFTER_S', '0'],
    ['RECONCILE_PENDING_AFTER_S', '-600'],
    ['RECONCILE_INTERVAL_S', '1.5'],
    ['RECONCILE_INTERVAL_S', 'soon'],
    ['RECONCILE_BATCH_SIZE', ''],
  ])('refuses %s=%j with one line naming it', (name, value) => {
    expect(() => loadBillingWorkerConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadBillingWorkerConfig({ [name]: value })).toThrow(new RegExp(`^invalid configuration: ${name} is invalid`));
  });
});
