import { SecretStore } from '@flagship/config';
import { FakeSecretsManager } from './fake-secrets-manager';
import { waitFor } from './processes';

/** SecretStore's AWS Secrets Manager path, through the real AWS SDK against a local fake of its JSON protocol. */
describe('SecretStore with AWS Secrets Manager', () => {
  let sm: FakeSecretsManager;
  const credentials = { AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE', AWS_SECRET_ACCESS_KEY: 'example-secret' };
  const saved: Record<string, string | undefined> = {};

  beforeAll(async () => {
    sm = await FakeSecretsManager.start();
    // The SDK reads credentials from the process environment, as it does in production.
    for (const [k, v] of Object.entries(credentials)) {
      saved[k] = process.env[k];
      process.env[k] = v;
    }
  });

  afterAll(async () => {
    for (const [k, v] of Object.entries(saved)) if (v === undefined) delete process.env[k];
    else process.env[k] = v;
    await sm.close();
  });

  it('reads the secret, prefers it over the environment, and falls back to the environment for names it lacks', async () => {
    sm.put('flagship/a', { STRIPE_SECRET_KEY: 'sk_from_sm' });
    const store = await SecretStore.create({ env: { STRIPE_SECRET_KEY: 'sk_from_env', OTHER: 'env-only' }, secretId: 'flagship/a', endpoint: sm.url, refreshSeconds: 300 });
    try {
      expect(store.get('STRIPE_SECRET_KEY')).toBe('sk_from_sm');
      expect(store.get('OTHER')).toBe('env-only');
      expect(store.get('MISSING')).toBeUndefined();
      expect(sm.reads).toContain('flagship/a');
      expect(JSON.stringify({ store })).not.toContain('sk_from');
    } finally {
      store.close();
    }
  });

  it('picks up a rotation after SECRETS_REFRESH_S without a restart, and tells listeners which names changed', async () => {
    sm.put('flagship/b', { STRIPE_WEBHOOK_SECRET: 'whsec_old', STRIPE_SECRET_KEY: 'sk_same' });
    const store = await SecretStore.create({ env: {}, secretId: 'flagship/b', endpoint: sm.url, refreshSeconds: 1 });
    const changes: string[][] = [];
    store.onChange((names) => changes.push(names));
    try {
      expect(store.get('STRIPE_WEBHOOK_SECRET')).toBe('whsec_old');
      sm.put('flagship/b', { STRIPE_WEBHOOK_SECRET: 'whsec_new', STRIPE_WEBHOOK_SECRET_PREVIOUS: 'whsec_old', STRIPE_SECRET_KEY: 'sk_same' });
      // Not re-read at once: the store answers from memory until the refresh interval passes.
      expect(store.get('STRIPE_WEBHOOK_SECRET')).toBe('whsec_old');
      await waitFor(async () => store.get('STRIPE_WEBHOOK_SECRET') === 'whsec_new', 4000);
      expect(store.get('STRIPE_WEBHOOK_SECRET_PREVIOUS')).toBe('whsec_old');
      expect(changes).toEqual([['STRIPE_WEBHOOK_SECRET', 'STRIPE_WEBHOOK_SECRET_PREVIOUS']]);
    } finally {
      store.close();
    }
  });

  it('keeps the last good values and reports the error when a refresh fails', async () => {
    sm.put('flagship/c', { STRIPE_SECRET_KEY: 'sk_c' });
    const errors: unknown[] = [];
    const store = await SecretStore.create({ env: {}, secretId: 'flagship/c', endpoint: sm.url, refreshSeconds: 1, onError: (e) => errors.push(e) });
    try {
      sm.failing = true;
      await waitFor(async () => errors.length > 0, 5000);
      expect(store.get('STRIPE_SECRET_KEY')).toBe('sk_c');
    } finally {
      sm.failing = false;
      store.close();
    }
  });

  it('refuses to start on a secret that does not exist', async () => {
    await expect(SecretStore.create({ env: {}, secretId: 'flagship/missing', endpoint: sm.url })).rejects.toThrow(/can't find the specified secret/);
  });
});
