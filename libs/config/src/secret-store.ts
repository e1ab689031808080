import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';

export interface SecretStoreOptions {
  env: NodeJS.ProcessEnv;
  /** When set, secrets come from this AWS Secrets Manager secret (a JSON object of NAME: value). */
  secretId?: string;
  refreshSeconds?: number;
  region?: string;
  endpoint?: string;
  onError?: (err: unknown) => void;
}

/**
 * Secrets from the environment, or from AWS Secrets Manager when a secret id is configured,
 * re-read periodically so a rotation needs no restart. Values are never logged: `toJSON` hides them.
 */
export class SecretStore {
  private values: Record<string, string> = {};
  private timer: NodeJS.Timeout | undefined;
  private readonly listeners = new Set<(names: string[]) => void>();
  private readonly client: SecretsManagerClient | undefined;

  private constructor(private readonly options: SecretStoreOptions) {
    if (options.secretId) {
      this.client = new SecretsManagerClient({
        region: options.region ?? 'us-east-1',
        ...(options.endpoint ? { endpoint: options.endpoint } : {}),
      });
    }
  }

  static async create(options: SecretStoreOptions): Promise<SecretStore> {
    const store = new SecretStore(options);
    if (store.client) {
      await store.refresh();
      const every = Math.max(1, options.refreshSeconds ?? 300) * 1000;
      store.timer = setInterval(() => {
        store.refresh().catch((err: unknown) => options.onError?.(err));
      }, every);
      store.timer.unref();
    }
    return store;
  }

  /** What every app's main.ts does: the environment, or the Secrets Manager secret its common settings name. */
  static forApp(
    env: NodeJS.ProcessEnv,
    config: { SECRETS_MANAGER_SECRET_ID: string; SECRETS_REFRESH_S: number; AWS_REGION: string; AWS_ENDPOINT_URL: string },
  ): Promise<SecretStore> {
    return SecretStore.create({
      env,
      secretId: config.SECRETS_MANAGER_SECRET_ID || undefined,
      refreshSeconds: config.SECRETS_REFRESH_S,
      region: config.AWS_REGION,
      endpoint: config.AWS_ENDPOINT_URL || undefined,
    });
  }

  /** Secrets from the given environment only (no Secrets Manager): synchronous, for tests and defaults. */
  static fromEnv(env: NodeJS.ProcessEnv): SecretStore {
    return new SecretStore({ env });
  }

  /** Re-reads the secret; listeners hear the names whose values changed. */
  async refresh(): Promise<void> {
    if (!this.client) return;
    const out = await this.client.send(new GetSecretValueCommand({ SecretId: this.options.secretId }));
    if (typeof out.SecretString !== 'string') throw new Error('the configured secret has no SecretString');
    const parsed: unknown = JSON.parse(out.SecretString);
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      throw new Error('the configured secret is not a JSON object');
    }
    const next: Record<string, string> = {};
    for (const [k, v] of Object.entries(parsed)) if (typeof v === 'string') next[k] = v;
    const changed = Object.keys({ ...this.values, ...next }).filter((k) => this.values[k] !== next[k]);
    this.values = next;
    if (changed.length > 0) for (const l of this.listeners) l(changed);
  }

  /** The secret's value: Secrets Manager first, then the environment. */
  get(name: string): string | undefined {
    const v = this.values[name] ?? this.options.env[name];
    return v === '' ? undefined : v;
  }

  onChange(listener: (names: string[]) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.client?.destroy();
  }

  toJSON(): string {
    return '[SecretStore]';
  }
}
