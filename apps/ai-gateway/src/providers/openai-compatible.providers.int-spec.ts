import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SecretStore } from '@flagship/config';
import { FakeModelUpstream, freePort } from '@flagship/testing';
import { OpenAiCompatibleProviders } from './openai-compatible.providers';
import type { ProviderLayerOptions } from './provider.env';
import { type ProviderKey, ProviderError, type StreamSink, type UpstreamRequest } from './provider.types';

/**
 * The provider layer against local fake upstreams speaking OpenAI's protocol: no pipeline, no
 * database; real sockets, real undici pools, real time-outs.
 */

class CollectingSink implements StreamSink {
  started: ProviderKey[] = [];
  parts: Buffer[] = [];
  onChunk: (() => void) | undefined;
  start(provider: ProviderKey): void {
    this.started.push(provider);
  }
  chunk(bytes: Buffer): void {
    this.parts.push(bytes);
    this.onChunk?.();
  }
  get text(): string {
    return Buffer.concat(this.parts).toString('utf8');
  }
  /** The `data:` payloads written, in order. */
  get events(): string[] {
    return this.text
      .split('\n\n')
      .filter((e) => e !== '')
      .map((e) => e.replace(/^data: /, ''));
  }
}

const chatBody = (text = 'hello big world', extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  model: 'fake-chat-1',
  messages: [{ role: 'user', content: text }],
  ...extra,
});

let requestNo = 0;
function req(over: Partial<UpstreamRequest> = {}): UpstreamRequest {
  const stream = over.stream ?? false;
  return {
    endpoint: 'chat.completions',
    body: chatBody(undefined, stream ? { stream: true } : {}),
    stream,
    requestId: `req-${++requestNo}`,
    providers: ['inhouse'],
    signal: new AbortController().signal,
    ...over,
  };
}

const json = (b: Buffer): any => JSON.parse(b.toString('utf8'));

describe('OpenAiCompatibleProviders', () => {
  let inhouse: FakeModelUpstream;
  let hosted: FakeModelUpstream;
  let env: NodeJS.ProcessEnv;
  const open: OpenAiCompatibleProviders[] = [];

  function layer(over: Partial<ProviderLayerOptions> = {}, urls: Partial<Record<ProviderKey, string | undefined>> = {}): OpenAiCompatibleProviders {
    const p = new OpenAiCompatibleProviders({
      upstreams: {
        inhouse: { url: 'inhouse' in urls ? urls.inhouse : inhouse.url, apiKeySecret: 'PROVIDER_INHOUSE_API_KEY' },
        hosted: { url: 'hosted' in urls ? urls.hosted : hosted.url, apiKeySecret: 'PROVIDER_HOSTED_API_KEY' },
      },
      secrets: SecretStore.fromEnv(env),
      connectTimeoutMs: 1000,
      firstByteTimeoutMs: 2000,
      totalTimeoutMs: 5000,
      maxRetries: 2,
      breakerFailures: 5,
      breakerCooldownMs: 10_000,
      maxConnections: 16,
      retryBaseMs: 5,
      ...over,
    });
    open.push(p);
    return p;
  }

  beforeAll(async () => {
    inhouse = await FakeModelUpstream.start({ apiKey: 'sk-in-1' });
    hosted = await FakeModelUpstream.start({ apiKey: 'sk-host-1', models: ['gpt-hosted'] });
  });
  afterAll(async () => {
    await inhouse.close();
    await hosted.close();
  });
  beforeEach(() => {
    inhouse.reset();
    hosted.reset();
    env = { PROVIDER_INHOUSE_API_KEY: 'sk-in-1', PROVIDER_HOSTED_API_KEY: 'sk-host-1' };
  });
  afterEach(async () => {
    for (const p of open.splice(0)) await p.close();
  });

  describe('non-streamed', () => {
    it('relays the answer with the upstream usage, the key and the request id', async () => {
      const r = await layer().json(req({ body: chatBody('a b c', { temperature: 0.2, tools: [{ type: 'function', function: { name: 'f' } }], seed: 7 }) }));
      expect(r.provider).toBe('inhouse');
      expect(r.status).toBe(200);
      expect(json(r.body).choices[0].message.content).toBe('echo: a b c');
      expect(r.usage).toEqual({ inputTokens: 3, outputTokens: 4, estimated: false });
      expect(r.upstreamMs).toBeGreaterThan(0);
      expect(inhouse.lastHeaders.chat?.authorization).toBe('Bearer sk-in-1');
      expect(inhouse.lastHeaders.chat?.['x-request-id']).toBe(`req-${requestNo}`);
      // Every field the gateway does not need goes to the upstream untouched.
      expect(inhouse.lastBody.chat).toEqual(chatBody('a b c', { temperature: 0.2, tools: [{ type: 'function', function: { name: 'f' } }], seed: 7 }));
    });

    it('embeddings carry input tokens only', async () => {
      const r = await layer().json(req({ endpoint: 'embeddings', body: { model: 'fake-embed-1', input: ['one two', 'three'] } }));
      expect(r.status).toBe(200);
      expect(json(r.body).data).toHaveLength(2);
      expect(r.usage).toEqual({ inputTokens: 3, outputTokens: 0, estimated: false });
    });

    it('estimates usage at four characters a token when the upstream sends none', async () => {
      inhouse.behave({ omitUsage: true });
      const r = await layer().json(req({ body: chatBody('twelve chars') }));
      // "twelve chars" is 12 characters: 3 tokens; "echo: twelve chars" is 18: 5.
      expect(r.usage).toEqual({ inputTokens: 3, outputTokens: 5, estimated: true });
      const e = await layer().json(req({ endpoint: 'embeddings', body: { model: 'm', input: 'abcdefghi' } }));
      expect(e.usage).toEqual({ inputTokens: 3, outputTokens: 0, estimated: true });
    });

    it('relays an upstream 4xx as it is, without retrying', async () => {
      inhouse.failNext({ kind: 'status', status: 429, body: { error: { message: 'slow down', type: 'rate_limit', code: 'rate_limit_exceeded', param: null } } });
      const r = await layer().json(req());
      expect(r.status).toBe(429);
      expect(json(r.body).error.code).toBe('rate_limit_exceeded');
      expect(r.usage).toEqual({ inputTokens: 0, outputTokens: 0, estimated: false });
      expect(inhouse.calls.chat).toBe(1);
      const bad = await layer().json(req({ body: { model: 'm' } }));
      expect(bad.status).toBe(400);
    });

    /** An upstream that answers `status` with a Content-Length of 1000, sends `start`, and cuts the connection. */
    async function withBrokenAnswers(status: number, start: string, test: (url: string, calls: () => number) => Promise<void>): Promise<void> {
      let calls = 0;
      const half = createServer((r, res) => {
        calls++;
        r.resume();
        res.writeHead(status, { 'content-type': 'application/json', 'content-length': '1000' });
        res.write(start);
        setTimeout(() => res.socket?.destroy(), 5);
      });
      half.listen(0, '127.0.0.1');
      await once(half, 'listening');
      try {
        await test(`http://127.0.0.1:${(half.address() as AddressInfo).port}/v1`, () => calls);
      } finally {
        half.closeAllConnections();
        half.close();
      }
    }

    it('an answer that breaks off after its status is 502 provider_error, counts against the circuit, and is never retried (the provider may have run it)', async () => {
      await withBrokenAnswers(200, '{"id":"chatcmpl-half","object":"chat.completion",', async (url, calls) => {
        // Retries allowed and the circuit far from open: still one call.
        await expect(layer({}, { inhouse: url }).json(req())).rejects.toMatchObject({ status: 502, code: 'provider_error' });
        expect(calls()).toBe(1);
        const p = layer({ breakerFailures: 1 }, { inhouse: url });
        await expect(p.json(req())).rejects.toMatchObject({ status: 502, code: 'provider_error' });
        expect(p.circuits().inhouse).toBe('open');
      });
    });

    it('a 503 whose body breaks off is judged by its status: retried, then 503 provider_unavailable', async () => {
      await withBrokenAnswers(503, '{"error":', async (url, calls) => {
        await expect(layer({}, { inhouse: url }).json(req())).rejects.toMatchObject({ status: 503, code: 'provider_unavailable' });
        expect(calls()).toBe(3);
      });
    });

    it('a client that goes away after the request was sent: the answer is still read for its usage, not counted against the circuit, the upstream asked once', async () => {
      inhouse.behave({ firstByteDelayMs: 400 });
      const client = new AbortController();
      const p = layer({ breakerFailures: 1 });
      const call = p.json(req({ signal: client.signal }));
      setTimeout(() => client.abort(), 50);
      await expect(call).resolves.toMatchObject({ status: 200, usage: { inputTokens: 3, outputTokens: 4, estimated: false } });
      expect(inhouse.calls.chat).toBe(1);
      expect(p.circuits().inhouse).toBe('closed');
      // An already-gone client is never sent upstream at all.
      await expect(p.json(req({ signal: client.signal }))).rejects.toMatchObject({ status: 502, code: 'provider_error', message: 'The client went away before the request was sent.' });
      expect(inhouse.calls.chat).toBe(1);
    });

    it('after the client left, the answer is awaited abandonedReadMs at most: then 504 with the input estimated, paid for', async () => {
      // An answer that never comes, and time-outs of 10 s: without the 100 ms cut-off the call would end
      // only then, so a bound of 2.5 s holds on a loaded machine and still tells the two apart.
      inhouse.behave({ failure: { kind: 'hang' } });
      const client = new AbortController();
      const started = performance.now();
      const call = layer({ abandonedReadMs: 100, firstByteTimeoutMs: 10_000, totalTimeoutMs: 10_000 }).json(req({ signal: client.signal }));
      setTimeout(() => client.abort(), 50);
      const err = (await call.catch((e: unknown) => e)) as ProviderError;
      expect(err).toMatchObject({ status: 504, code: 'provider_timeout' });
      expect(err.usage.estimated).toBe(true);
      expect(err.usage.inputTokens).toBeGreaterThan(0);
      expect(performance.now() - started).toBeLessThan(2500);
      inhouse.dropConnections();
    });
  });

  describe('retries, before anything reached the client', () => {
    it('retries upstream 502 and 503 up to the budget, then answers', async () => {
      inhouse.failNext({ kind: 'status', status: 503 });
      inhouse.failNext({ kind: 'status', status: 502 });
      const r = await layer().json(req());
      expect(r.status).toBe(200);
      expect(inhouse.calls.chat).toBe(3);
    });

    it('retries a reset connection', async () => {
      inhouse.failNext({ kind: 'reset' });
      const r = await layer().json(req());
      expect(r.status).toBe(200);
      expect(inhouse.calls.chat).toBe(2);
    });

    it('gives up after two retries: 503 provider_unavailable', async () => {
      inhouse.behave({ failure: { kind: 'status', status: 503 } });
      await expect(layer().json(req())).rejects.toMatchObject({ status: 503, code: 'provider_unavailable', provider: 'inhouse' });
      expect(inhouse.calls.chat).toBe(3);
    });

    it('does not retry a 500 (502 provider_error) or a 504 (504 provider_timeout)', async () => {
      inhouse.failNext({ kind: 'status', status: 500 });
      await expect(layer().json(req())).rejects.toMatchObject({ status: 502, code: 'provider_error' });
      inhouse.failNext({ kind: 'status', status: 504 });
      await expect(layer().json(req())).rejects.toMatchObject({ status: 504, code: 'provider_timeout' });
      expect(inhouse.calls.chat).toBe(2);
    });

    it('stops retrying when the next wait would pass the total time-out', async () => {
      inhouse.behave({ failure: { kind: 'status', status: 503 } });
      // A wait of 2.5 to 7.5 s would meet the 2 s deadline and end as 504: the upstream's 503 comes back at once instead.
      // (The deadline leaves a loaded machine room for the first attempt; 300 ms was once exceeded in CI.)
      await expect(layer({ retryBaseMs: 5000, totalTimeoutMs: 2000 }).json(req())).rejects.toMatchObject({ status: 503 });
      expect(inhouse.calls.chat).toBe(1);
    });
  });

  describe('unconfigured, unreachable, too slow', () => {
    it('an unconfigured provider is 503 provider_unavailable', async () => {
      await expect(layer({}, { hosted: undefined }).json(req({ providers: ['hosted'] }))).rejects.toMatchObject({
        status: 503,
        code: 'provider_unavailable',
        provider: 'hosted',
      });
    });

    it('an unreachable provider is 503 provider_unavailable, after its retries', async () => {
      const nobody = `http://127.0.0.1:${await freePort()}/v1`;
      const err: unknown = await layer({}, { inhouse: nobody }).json(req()).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ProviderError);
      expect(err).toMatchObject({ status: 503, code: 'provider_unavailable' });
    });

    it('no first byte within the time-out is 504 provider_timeout, not retried', async () => {
      inhouse.behave({ failure: { kind: 'hang' } });
      const started = Date.now();
      // The total time-out (15 s) would also answer 504: the bound, far from both, tells which fired.
      await expect(layer({ firstByteTimeoutMs: 200, totalTimeoutMs: 15_000 }).json(req())).rejects.toMatchObject({ status: 504, code: 'provider_timeout' });
      expect(Date.now() - started).toBeGreaterThanOrEqual(190);
      expect(Date.now() - started).toBeLessThan(5000);
      expect(inhouse.calls.chat).toBe(1);
      inhouse.dropConnections();
    });

    it('the total time-out bounds a slow answer', async () => {
      inhouse.behave({ firstByteDelayMs: 600 });
      await expect(layer({ totalTimeoutMs: 250 }).json(req())).rejects.toMatchObject({ status: 504, code: 'provider_timeout' });
    });
  });

  describe('circuit breaker and fallback', () => {
    it('opens after consecutive failures, then stops calling the upstream until a probe after the cool-down', async () => {
      const p = layer({ maxRetries: 0, breakerFailures: 3, breakerCooldownMs: 300 });
      inhouse.behave({ failure: { kind: 'status', status: 500 } });
      for (let i = 0; i < 3; i++) await expect(p.json(req())).rejects.toMatchObject({ code: 'provider_error' });
      expect(p.circuits().inhouse).toBe('open');
      inhouse.reset();
      await expect(p.json(req())).rejects.toMatchObject({ status: 503, code: 'provider_unavailable', message: expect.stringMatching(/circuit/) });
      expect(inhouse.calls.chat).toBe(0);
      await new Promise((r) => setTimeout(r, 320));
      const probe = await p.json(req());
      expect(probe.status).toBe(200);
      expect(inhouse.calls.chat).toBe(1);
      expect(p.circuits().inhouse).toBe('closed');
    });

    it('falls back to hosted when inhouse fails, and says so', async () => {
      inhouse.behave({ failure: { kind: 'status', status: 503 } });
      const r = await layer().json(req({ providers: ['inhouse', 'hosted'] }));
      expect(r.provider).toBe('hosted');
      expect(r.status).toBe(200);
      expect(inhouse.calls.chat).toBe(3);
      expect(hosted.calls.chat).toBe(1);
      expect(hosted.lastHeaders.chat?.authorization).toBe('Bearer sk-host-1');
    });

    it('goes straight to hosted while inhouse is open; without fallback it is 503', async () => {
      const p = layer({ maxRetries: 0, breakerFailures: 2 });
      inhouse.behave({ failure: { kind: 'reset' } });
      for (let i = 0; i < 2; i++) await expect(p.json(req())).rejects.toBeInstanceOf(ProviderError);
      inhouse.resetCalls();
      const r = await p.json(req({ providers: ['inhouse', 'hosted'] }));
      expect(r.provider).toBe('hosted');
      expect(inhouse.calls.chat).toBe(0);
      await expect(p.json(req())).rejects.toMatchObject({ status: 503, provider: 'inhouse' });
    });

    it('falls back when inhouse gives no first byte in time, within the same total time', async () => {
      inhouse.behave({ failure: { kind: 'hang' } });
      // Had the total time-out (3 s) passed instead, there would be no time left for hosted and no fallback.
      const r = await layer({ firstByteTimeoutMs: 300, totalTimeoutMs: 3000 }).json(req({ providers: ['inhouse', 'hosted'] }));
      expect(r).toMatchObject({ provider: 'hosted', status: 200 });
      expect(inhouse.calls.chat).toBe(1);
      inhouse.dropConnections();
    });

    it('does not fall back on an upstream 4xx', async () => {
      inhouse.failNext({ kind: 'status', status: 400 });
      const r = await layer().json(req({ providers: ['inhouse', 'hosted'] }));
      expect(r).toMatchObject({ provider: 'inhouse', status: 400 });
      expect(hosted.calls.chat).toBe(0);
    });

    it('reports the last provider that failed when both do', async () => {
      inhouse.behave({ failure: { kind: 'status', status: 503 } });
      hosted.behave({ failure: { kind: 'status', status: 500 } });
      await expect(layer().json(req({ providers: ['inhouse', 'hosted'] }))).rejects.toMatchObject({ provider: 'hosted', status: 502 });
    });
  });

  describe('streaming', () => {
    it('relays chunk by chunk, always asks for usage, and hides the usage chunk the client did not ask for', async () => {
      const sink = new CollectingSink();
      const r = await layer().stream(req({ stream: true, body: chatBody('one two three', { stream: true, temperature: 1 }) }), sink);
      expect(r).toMatchObject({ provider: 'inhouse', outcome: 'completed', usage: { inputTokens: 3, outputTokens: 4, estimated: false } });
      expect(sink.started).toEqual(['inhouse']);
      expect(inhouse.lastBody.chat).toMatchObject({ stream: true, stream_options: { include_usage: true }, temperature: 1 });
      const events = sink.events;
      expect(events.at(-1)).toBe('[DONE]');
      const chunks = events.slice(0, -1).map((e) => JSON.parse(e));
      expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('echo: one two three');
      expect(chunks.every((c) => c.choices.length === 1)).toBe(true);
      expect(chunks.at(-1).choices[0].finish_reason).toBe('stop');
    });

    it('passes the usage chunk (after finish_reason) on when the client asked for it', async () => {
      const sink = new CollectingSink();
      const r = await layer().stream(req({ stream: true, body: chatBody('x y', { stream: true, stream_options: { include_usage: true } }) }), sink);
      expect(r.usage).toEqual({ inputTokens: 2, outputTokens: 3, estimated: false });
      const chunks = sink.events.slice(0, -1).map((e) => JSON.parse(e));
      expect(chunks.at(-2).choices[0].finish_reason).toBe('stop');
      expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: 2, completion_tokens: 3 } });
    });

    it('retries before the first byte, then streams once', async () => {
      inhouse.failNext({ kind: 'status', status: 503 });
      const sink = new CollectingSink();
      const r = await layer().stream(req({ stream: true }), sink);
      expect(r.outcome).toBe('completed');
      expect(sink.started).toEqual(['inhouse']);
      expect(inhouse.calls.chat).toBe(2);
    });

    it('falls back before the first byte and names the provider used', async () => {
      inhouse.behave({ failure: { kind: 'reset' } });
      const sink = new CollectingSink();
      const r = await layer().stream(req({ stream: true, providers: ['inhouse', 'hosted'] }), sink);
      expect(r.provider).toBe('hosted');
      expect(sink.started).toEqual(['hosted']);
    });

    it('throws before start when nothing could answer', async () => {
      inhouse.behave({ failure: { kind: 'status', status: 502 } });
      const sink = new CollectingSink();
      await expect(layer().stream(req({ stream: true }), sink)).rejects.toMatchObject({ status: 502, code: 'provider_error' });
      expect(sink.started).toEqual([]);
      expect(sink.parts).toEqual([]);
    });

    it('an upstream 4xx resolves as rejected with the body, and nothing is started', async () => {
      const sink = new CollectingSink();
      const r = await layer().stream(req({ stream: true, body: { model: 'm', stream: true } }), sink);
      expect(r.outcome).toBe('rejected');
      expect(r.rejection?.status).toBe(400);
      expect(json(r.rejection!.body).error.message).toMatch(/messages/);
      expect(sink.started).toEqual([]);
    });

    it('a mid-stream break ends with an error event and no [DONE], accounts the text delivered, and is not retried', async () => {
      inhouse.behave({ breakAfterChunks: 2 });
      const sink = new CollectingSink();
      const r = await layer().stream(req({ stream: true, body: chatBody('alpha beta gamma delta', { stream: true }) }), sink);
      expect(r.outcome).toBe('upstream_broken');
      const events = sink.events;
      expect(events).not.toContain('[DONE]');
      expect(JSON.parse(events.at(-1)!)).toEqual({
        error: { message: 'The provider broke off the stream.', type: 'server_error', code: 'provider_error', param: null },
      });
      // Delivered: "echo: alpha" (11 characters: 3 tokens); sent: "alpha beta gamma delta" (22: 6).
      expect(r.usage).toEqual({ inputTokens: 6, outputTokens: 3, estimated: true });
      expect(inhouse.calls.chat).toBe(1);
    });

    it('reads the usage that comes after finish_reason even when [DONE] never does', async () => {
      inhouse.behave({ omitDone: true });
      const sink = new CollectingSink();
      const r = await layer().stream(req({ stream: true, body: chatBody('p q', { stream: true }) }), sink);
      expect(r.outcome).toBe('completed');
      expect(r.usage).toEqual({ inputTokens: 2, outputTokens: 3, estimated: false });
      expect(sink.events.at(-1)).toBe('[DONE]');
    });

    it('when the client goes away, passes nothing more on but reads the rest for its usage', async () => {
      inhouse.behave({ chunkDelayMs: 30 });
      const client = new AbortController();
      const sink = new CollectingSink();
      let contentChunks = 0;
      sink.onChunk = () => {
        contentChunks++;
        if (contentChunks === 2) client.abort();
      };
      const r = await layer().stream(req({ stream: true, signal: client.signal, body: chatBody('w1 w2 w3 w4 w5 w6 w7 w8', { stream: true }) }), sink);
      expect(r.outcome).toBe('client_gone');
      expect(r.usage).toEqual({ inputTokens: 8, outputTokens: 9, estimated: false });
      expect(sink.parts).toHaveLength(2);
      expect(sink.text).not.toMatch(/error/);
    });

    it('reads at most abandonedReadBytes after the client left, then bills what was read, estimated', async () => {
      // 60 words at 100 ms: read to its end, the rest would take 6 s after the client left; cut after
      // the next chunk, about 100 ms. The bound sits far from both.
      inhouse.behave({ chunkDelayMs: 100 });
      const client = new AbortController();
      const sink = new CollectingSink();
      let contentChunks = 0;
      let leftAt = 0;
      sink.onChunk = () => {
        contentChunks++;
        if (contentChunks === 2) {
          leftAt = performance.now();
          client.abort();
        }
      };
      const words = Array.from({ length: 60 }, (_, i) => `w${i}`).join(' ');
      const r = await layer({ abandonedReadBytes: 1, totalTimeoutMs: 20_000 }).stream(req({ stream: true, signal: client.signal, body: chatBody(words, { stream: true }) }), sink);
      expect(r.outcome).toBe('client_gone');
      expect(r.usage.estimated).toBe(true);
      expect(r.usage.outputTokens).toBeGreaterThanOrEqual(2);
      expect(r.usage.outputTokens).toBeLessThan(61);
      expect(performance.now() - leftAt).toBeLessThan(1500);
    });

    it('cuts a stream that passes the total time-out with a provider_timeout event', async () => {
      inhouse.behave({ chunkDelayMs: 100 });
      const sink = new CollectingSink();
      const r = await layer({ totalTimeoutMs: 250 }).stream(req({ stream: true, body: chatBody('a b c d e f g h', { stream: true }) }), sink);
      expect(r.outcome).toBe('upstream_broken');
      expect(JSON.parse(sink.events.at(-1)!).error.code).toBe('provider_timeout');
      expect(sink.events).not.toContain('[DONE]');
    });

    it('a silent upstream mid-stream hits the first-byte (idle) time-out', async () => {
      // undici checks body silence on a coarse (half-second) clock: a gap well past the time-out.
      inhouse.behave({ chunkDelayMs: 2500 });
      const sink = new CollectingSink();
      const r = await layer({ firstByteTimeoutMs: 1000 }).stream(req({ stream: true }), sink);
      expect(r.outcome).toBe('upstream_broken');
      expect(JSON.parse(sink.events.at(-1)!).error.code).toBe('provider_timeout');
    });
  });

  it('reads the key per request, so a rotation is picked up without a restart', async () => {
    const p = layer();
    expect((await p.json(req())).status).toBe(200);
    inhouse.apiKey = 'sk-in-2';
    expect((await p.json(req())).status).toBe(401);
    env.PROVIDER_INHOUSE_API_KEY = 'sk-in-2';
    expect((await p.json(req())).status).toBe(200);
    expect(inhouse.lastHeaders.chat?.authorization).toBe('Bearer sk-in-2');
    inhouse.apiKey = 'sk-in-1';
  });

  it('lists the configured providers with their upstream models', async () => {
    const p = layer({}, { hosted: undefined });
    await p.start();
    expect(p.configured()).toEqual([{ provider: 'inhouse', models: ['fake-chat-1', 'fake-embed-1'] }]);
    const both = layer();
    await both.start();
    expect(both.configured()).toEqual([
      { provider: 'inhouse', models: ['fake-chat-1', 'fake-embed-1'] },
      { provider: 'hosted', models: ['gpt-hosted'] },
    ]);
  });
});
