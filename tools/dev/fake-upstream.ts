/**
 * The fake OpenAI-compatible model upstream (libs/testing) as a process: `npm start` runs it as the
 * gateway's `inhouse` provider when PROVIDER_INHOUSE_URL is unset, and tools/bench/gateway.ts runs it
 * as the upstream of every case, docker/compose.yaml as its `fake-model` service (the image's `fakes`
 * target runs the compiled file, dist/tools/dev/fake-upstream.js).
 *
 *   TS_NODE_PROJECT=tsconfig.json node -r ts-node/register/transpile-only -r tsconfig-paths/register \
 *     tools/dev/fake-upstream.ts
 *
 * Settings: FAKE_UPSTREAM_PORT (default 0: any free port), FAKE_UPSTREAM_HOST (bind address,
 * default 127.0.0.1; 0.0.0.0 in a container), FAKE_UPSTREAM_API_KEY (when set, required
 * as the bearer key), FAKE_UPSTREAM_LATENCY_MS (before the first byte), FAKE_UPSTREAM_CHUNK_MS
 * (between streamed chunks), FAKE_UPSTREAM_MODELS (comma-separated ids for /v1/models). Prints `fake model upstream listening on <base URL>` once ready.
 */
// The file itself, not @flagship/testing: tsconfig.fakes.json compiles the fakes for the image
// without the rest of the testing lib.
// eslint-disable-next-line @nx/enforce-module-boundaries
import { FakeModelUpstream } from '../../libs/testing/src/fake-model-upstream';

async function main(): Promise<void> {
  const env = process.env;
  const fake = await FakeModelUpstream.start({
    port: Number(env.FAKE_UPSTREAM_PORT ?? 0),
    host: env.FAKE_UPSTREAM_HOST || '127.0.0.1',
    apiKey: env.FAKE_UPSTREAM_API_KEY || undefined,
    models: env.FAKE_UPSTREAM_MODELS ? env.FAKE_UPSTREAM_MODELS.split(',') : undefined,
  });
  fake.behave({ firstByteDelayMs: Number(env.FAKE_UPSTREAM_LATENCY_MS ?? 0), chunkDelayMs: Number(env.FAKE_UPSTREAM_CHUNK_MS ?? 0) });
  process.stdout.write(`fake model upstream listening on ${fake.url}\n`);
  const stop = (): void => {
    void fake.close().then(() => process.exit(0));
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((err: unknown) => {
  process.stderr.write(`fake model upstream: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
