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
    ['USAGE_RETENTION_MONTHS', '-1'],
    ['USAGE_RETENTION_MONTHS', '1.5'],
    ['USAGE_RETENTION_MONTHS', '1201'],
    ['USAGE_PARTITIONS_AHEAD_MONTHS', '0'],
  ])('refuses %s=%j with one line naming it', (name, value) => {
    expect(() => loadBillingWorkerConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadBillingWorkerConfig({ [name]: value })).toThrow(new RegExp(`^invalid configuration: ${name} is invalid`));
  });

  it('keeps usage forever unless the operator sets a retention, and partitions three months ahead', () => {
    const c = loadBillingWorkerConfig({});
    expect([c.USAGE_RETENTION_MONTHS, c.USAGE_PARTITIONS_AHEAD_MONTHS]).toEqual([0, 3]);
    expect(loadBillingWorkerConfig({ USAGE_RETENTION_MONTHS: '13' }).USAGE_RETENTION_MONTHS).toBe(13);
  });

  it('refuses a WEBHOOK_SECRETS_KEY that is not 32 bytes, and private webhook URLs in production', () => {
    expect(loadBillingWorkerConfig({}).WEBHOOK_SECRETS_KEY).toBe('');
    expect(() => loadBillingWorkerConfig({ WEBHOOK_SECRETS_KEY: Buffer.alloc(16).toString('base64') })).toThrow(/WEBHOOK_SECRETS_KEY must be 32 bytes/);
    expect(loadBillingWorkerConfig({ WEBHOOK_SECRETS_KEY: Buffer.alloc(32).toString('base64') }).WEBHOOK_RETRY_WINDOW_S).toBe(86400);
    expect(() => loadBillingWorkerConfig({ NODE_ENV: 'production', WEBHOOKS_ALLOW_PRIVATE_URLS: 'true' })).toThrow(/WEBHOOKS_ALLOW_PRIVATE_URLS=true is refused/);
    expect(loadBillingWorkerConfig({ NODE_ENV: 'development', WEBHOOKS_ALLOW_PRIVATE_URLS: 'true' }).WEBHOOKS_ALLOW_PRIVATE_URLS).toBe(true);
  });
});
