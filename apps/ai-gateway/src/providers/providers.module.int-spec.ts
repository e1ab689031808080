import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { loadConfig, SecretStore } from '@flagship/config';
import { FakeModelUpstream } from '@flagship/testing';
import { providerEnv, providerOptionsFromEnv } from './provider.env';
import type { ProviderClient } from './provider.types';
import { PROVIDER_CLIENT, ProvidersModule } from './providers.module';

describe('ProvidersModule', () => {
  it('builds the client from the environment, lists models before traffic, and closes its pools on shutdown', async () => {
    const fake = await FakeModelUpstream.start({ apiKey: 'sk-mod' });
    try {
      const env = { PROVIDER_INHOUSE_URL: fake.url, PROVIDER_INHOUSE_API_KEY: 'sk-mod', PROVIDER_MAX_RETRIES: '0' };
      const config = loadConfig(env, providerEnv);
      expect(config.PROVIDER_TOTAL_TIMEOUT_MS).toBe(300000);
      const app = await NestFactory.createApplicationContext(ProvidersModule.forRoot(providerOptionsFromEnv(config, SecretStore.fromEnv(env))), {
        logger: false,
      });
      app.enableShutdownHooks();
      const client = app.get<ProviderClient>(PROVIDER_CLIENT);
      expect(client.configured()).toEqual([{ provider: 'inhouse', models: ['fake-chat-1', 'fake-embed-1'] }]);
      const r = await client.json({
        endpoint: 'chat.completions',
        body: { model: 'fake-chat-1', messages: [{ role: 'user', content: 'hi' }] },
        stream: false,
        requestId: 'r1',
        providers: ['inhouse'],
        signal: new AbortController().signal,
      });
      expect(r.status).toBe(200);
      await app.close();
      await expect(
        client.json({ endpoint: 'embeddings', body: { model: 'm', input: 'x' }, stream: false, requestId: 'r2', providers: ['inhouse'], signal: new AbortController().signal }),
      ).rejects.toThrow();
    } finally {
      await fake.close();
    }
  });

  it('refuses a bad URL or time-out at start-up, naming the variable', () => {
    expect(() => loadConfig({ PROVIDER_TOTAL_TIMEOUT_MS: 'soon' }, providerEnv)).toThrow(/PROVIDER_TOTAL_TIMEOUT_MS/);
    expect(() => loadConfig({ PROVIDER_INHOUSE_URL: 'models.internal:8000/v1' }, providerEnv)).toThrow(/PROVIDER_INHOUSE_URL is invalid/);
    expect(() => loadConfig({ PROVIDER_HOSTED_URL: 'ftp://example.test/v1' }, providerEnv)).toThrow(/PROVIDER_HOSTED_URL is invalid \(must be an http/);
    expect(loadConfig({ PROVIDER_HOSTED_URL: 'https://api.openai.com/v1' }, providerEnv).PROVIDER_HOSTED_URL).toBe('https://api.openai.com/v1');
    expect(loadConfig({}, providerEnv).PROVIDER_INHOUSE_URL).toBe('');
  });
});
