import Anthropic, { BadRequestError as AnthropicBadRequest } from '@anthropic-ai/sdk';
import OpenAI, { BadRequestError } from 'openai';
import type { DataSource } from 'typeorm';
import { DATA_SOURCE } from '@flagship/persistence';
import { FakeImageHost, FakeModelUpstream, TINY_PNG } from '@flagship/testing';
import type { HostResolver } from './media/media-fetcher';
import { balanceOf, createTenant, type GatewayIntegration, ledgerRows, startGatewayIntegration } from './testing/gateway.fixture';

/**
 * Issue 30, item 3: image URLs and the fields that change the operator's cost, through the real
 * `openai` and `@anthropic-ai/sdk` clients, the started gateway, Postgres and Redis. The image host
 * is a local HTTPS server; names resolve through the test's table (no traffic leaves loopback):
 * `images.test` to loopback, which GATEWAY_MEDIA_ALLOW_LOOPBACK lets stand for a public host here,
 * `metadata.test` to the cloud metadata address, `internal.test` to a private one.
 */
describe('ai-gateway: image URLs and refused fields', () => {
  let setup: GatewayIntegration | undefined;
  let host: FakeImageHost;
  let fake: FakeModelUpstream;
  /** The hosted provider (OpenAI's API, which fetches image URLs from its own network). */
  let hosted: FakeModelUpstream;
  let ds: DataSource;
  let tenant: string;
  const table: Record<string, string> = { 'images.test': '127.0.0.1', 'metadata.test': '169.254.169.254', 'internal.test': '10.1.2.3' };
  const resolveImageHost: HostResolver = async (name) => {
    const address = table[name];
    if (address === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
    return [{ address, family: 4 }];
  };

  beforeAll(async () => {
    host = await FakeImageHost.start(Object.keys(table));
    hosted = await FakeModelUpstream.start();
    setup = await startGatewayIntegration(
      { GATEWAY_MEDIA_ALLOW_LOOPBACK: 'true', GATEWAY_IMAGE_TOKENS: '1000', PROVIDER_BREAKER_FAILURES: '1000', PROVIDER_HOSTED_URL: hosted.url },
      { resolveImageHost, imageHostCa: host.ca },
    );
    fake = setup.fake;
    ds = setup.gw.app.get<DataSource>(DATA_SOURCE);
    tenant = await createTenant(ds, { entitlements: [{ productKey: 'core', tier: 'enterprise' }], balance: 10_000_000 });
  });
  afterAll(async () => {
    await setup?.close();
    await hosted?.close();
    await host?.close();
  });
  beforeEach(() => {
    fake.reset();
    hosted.reset();
    host.requests.length = 0;
  });

  const openai = async () =>
    new OpenAI({ baseURL: `${setup!.gw.url}/v1`, apiKey: await setup!.issue(tenant), defaultHeaders: { 'x-service-product-key': 'core' }, maxRetries: 0, timeout: 10_000 });
  const anthropic = async () =>
    new Anthropic({ baseURL: setup!.gw.url, apiKey: await setup!.issue(tenant), defaultHeaders: { 'x-service-product-key': 'core' }, maxRetries: 0, timeout: 10_000 });
  const withImage = (url: string): OpenAI.ChatCompletionCreateParamsNonStreaming => ({
    model: 'fake-chat-1',
    messages: [{ role: 'user', content: [{ type: 'text', text: 'what is it' }, { type: 'image_url', image_url: { url } }] }],
  });
  /** The rejection of `p` (or 'resolved'). */
  const rejection = (p: Promise<unknown>): Promise<unknown> => p.then(() => 'resolved', (err: unknown) => err);
  /** Nothing of a refused request is left: no ledger row of it, nothing reserved. */
  const nothingLeft = async (requestId: string | null | undefined) => {
    await setup!.gw.pipeline.drain();
    expect(requestId).toEqual(expect.any(String));
    expect((await ledgerRows(ds, tenant)).filter((r) => r.request_id === requestId)).toEqual([]);
    expect((await balanceOf(ds, tenant)).reserved).toBe(0);
  };

  describe('Chat Completions (openai)', () => {
    it.each([
      ['https://169.254.169.254/latest/meta-data/iam/security-credentials/', 'the image URL names a private or reserved address.'],
      ['http://images.example.com/cat.png', 'only https: and data: image URLs are accepted.'],
      ['https://user:pw@images.example.com/cat.png', 'the image URL must not carry credentials (user:password@).'],
    ])('refuses %s before anything is reserved: 400 naming the URL, the model server never called', async (url, reason) => {
      const err = await rejection((await openai()).chat.completions.create(withImage(url)));
      expect(err).toBeInstanceOf(BadRequestError);
      expect(err).toMatchObject({ status: 400, type: 'invalid_request_error', code: 'invalid_request', param: 'messages[0].content[1].image_url.url', error: { message: `messages[0].content[1].image_url.url: ${reason}` } });
      expect(fake.calls.chat).toBe(0);
      await nothingLeft((err as BadRequestError).headers?.get('x-request-id'));
    });

    it.each([
      ['metadata.test', 'the metadata address'],
      ['internal.test', 'a private address'],
      ['nowhere.test', 'nothing'],
    ])('refuses an https URL whose name (%s) resolves to %s: 400, no connection, the model server never called, the reservation and the tokens given back', async (name) => {
      // A client of its own: its token window holds this request alone.
      const client = new OpenAI({
        baseURL: `${setup!.gw.url}/v1`,
        apiKey: await setup!.issue(tenant, ['core'], `ffc_media${name.replace(/\W/g, '')}`),
        defaultHeaders: { 'x-service-product-key': 'core' },
        maxRetries: 0,
      });
      const err = await rejection(client.chat.completions.create(withImage(host.url(name, '/cat.png'))));
      expect((err as BadRequestError).headers?.get('x-ratelimit-remaining-tokens')).toBe('2000000');
      expect(err).toMatchObject({ status: 400, code: 'invalid_request', param: 'messages[0].content[1].image_url.url', error: { message: "messages[0].content[1].image_url.url: the image URL's host does not resolve to public addresses only." } });
      expect(host.requests).toEqual([]);
      expect(fake.calls.chat).toBe(0);
      await nothingLeft((err as BadRequestError).headers?.get('x-request-id'));
    });

    it('refuses an image URL that redirects (to the metadata address): the gateway follows no redirect', async () => {
      const err = await rejection((await openai()).chat.completions.create(withImage(host.url('images.test', '/redirect'))));
      expect(err).toMatchObject({ status: 400, param: 'messages[0].content[1].image_url.url', error: { message: expect.stringContaining('redirects (HTTP 302)') } });
      expect(host.requests).toEqual(['/redirect']);
      expect(fake.calls.chat).toBe(0);
    });

    it('fetches an image URL resolving to allowed addresses and sends the model server the image as a data: URL', async () => {
      const { data, response } = await (await openai()).chat.completions.create(withImage(host.url('images.test', '/cat.png'))).withResponse();
      expect(data.choices[0]!.message.content).toBe('echo: what is it');
      expect(host.requests).toEqual(['/cat.png']);
      expect(fake.lastBody.chat).toMatchObject({ messages: [{ content: [{ type: 'text' }, { type: 'image_url', image_url: { url: `data:image/png;base64,${TINY_PNG.toString('base64')}` } }] }] });
      await setup!.gw.pipeline.drain();
      const [row] = (await ledgerRows(ds, tenant)).filter((r) => r.request_id === response.headers.get('x-request-id'));
      expect(row).toMatchObject({ status: 'succeeded' });
    });

    it('streams too: the image fetched first', async () => {
      const stream = await (await openai()).chat.completions.create({ ...withImage(host.url('images.test', '/cat.png')), stream: true });
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
      expect(text).toBe('echo: what is it');
      expect(JSON.stringify(fake.lastBody.chat)).toContain(`data:image/png;base64,${TINY_PNG.toString('base64')}`);
    });

    it('passes a data: URL image as sent, fetching nothing', async () => {
      const url = `data:image/png;base64,${TINY_PNG.toString('base64')}`;
      await (await openai()).chat.completions.create(withImage(url));
      expect(fake.lastBody.chat).toMatchObject({ messages: [{ content: [{}, { image_url: { url } }] }] });
      expect(host.requests).toEqual([]);
    });

    it.each([
      [{ type: 'input_audio', input_audio: { data: 'UklGRg==', format: 'wav' } }, 'input_audio'],
      [{ type: 'file', file: { file_data: 'data:application/pdf;base64,JVBERi0=', filename: 'a.pdf' } }, 'file'],
      [{ type: 'video_url', video_url: { url: 'https://169.254.169.254/v.mp4' } }, 'video_url'],
      [{ type: 'audio_url', audio_url: { url: 'https://169.254.169.254/a.wav' } }, 'audio_url'],
    ])('refuses a %j part the gateway does not count: 400 naming it', async (part, type) => {
      const messages = [{ role: 'user', content: [{ type: 'text', text: 'hi' }, part] }] as unknown as OpenAI.ChatCompletionMessageParam[];
      const err = await rejection((await openai()).chat.completions.create({ model: 'fake-chat-1', messages }));
      expect(err).toMatchObject({ status: 400, code: 'invalid_request', param: 'messages[0].content[1].type', error: { message: expect.stringContaining(`content parts of type ${type} are not supported`) } });
      expect(fake.calls.chat).toBe(0);
    });

    it.each([
      ['store', { store: true }],
      ['metadata', { metadata: { project: 'x' } }],
      ['service_tier', { service_tier: 'priority' }],
      ['web_search_options', { web_search_options: { search_context_size: 'high' } }],
      ['prediction', { prediction: { type: 'content', content: 'the same text' } }],
    ] as Array<[string, Partial<OpenAI.ChatCompletionCreateParamsNonStreaming>]>)('refuses %s: 400 naming the field, the model server never called', async (field, extra) => {
      const err = await rejection((await openai()).chat.completions.create({ model: 'fake-chat-1', messages: [{ role: 'user', content: 'hi' }], ...extra }));
      expect(err).toBeInstanceOf(BadRequestError);
      expect(err).toMatchObject({ status: 400, code: 'invalid_request', param: field, error: { message: expect.stringMatching(new RegExp(`^${field} is not supported by this gateway: `)) } });
      expect(fake.calls.chat).toBe(0);
    });

    it('still passes other fields through (store: false changes nothing)', async () => {
      await (await openai()).chat.completions.create({ model: 'fake-chat-1', messages: [{ role: 'user', content: 'hi' }], store: false, seed: 3, user: 'u-1' });
      expect(fake.lastBody.chat).toMatchObject({ store: false, seed: 3, user: 'u-1' });
    });
  });

  describe('the hosted provider (GATEWAY_MEDIA_FETCH_PROVIDERS=inhouse, the default)', () => {
    it('gets an https image URL as sent when only it may serve the request: it fetches from its own network, not ours', async () => {
      const allowed = await createTenant(ds, { entitlements: [{ productKey: 'core', tier: 'enterprise' }], balance: 1_000_000, hostedProviderAllowed: true });
      const client = new OpenAI({
        baseURL: `${setup!.gw.url}/v1`,
        apiKey: await setup!.issue(allowed),
        defaultHeaders: { 'x-service-product-key': 'core', 'x-service-provider': 'hosted' },
        maxRetries: 0,
      });
      const url = host.url('images.test', '/cat.png');
      await client.chat.completions.create(withImage(url));
      expect(hosted.lastBody.chat).toMatchObject({ messages: [{ content: [{}, { image_url: { url } }] }] });
      expect(host.requests).toEqual([]);
      // The rule before any I/O holds for it too.
      await expect(client.chat.completions.create(withImage('https://169.254.169.254/x.png'))).rejects.toMatchObject({ status: 400, param: 'messages[0].content[1].image_url.url' });
      expect(hosted.calls.chat).toBe(1);
      // Asked of inhouse, with hosted as its fallback: fetched, since inhouse may be the one to serve it.
      await new OpenAI({ baseURL: `${setup!.gw.url}/v1`, apiKey: await setup!.issue(allowed), defaultHeaders: { 'x-service-product-key': 'core' }, maxRetries: 0 }).chat.completions.create(withImage(url));
      expect(fake.lastBody.chat).toMatchObject({ messages: [{ content: [{}, { image_url: { url: `data:image/png;base64,${TINY_PNG.toString('base64')}` } }] }] });
      expect(host.requests).toEqual(['/cat.png']);
    });
  });

  describe('Responses (openai)', () => {
    it('refuses an input_image naming the metadata address, at its own place', async () => {
      const err = await rejection(
        (await openai()).responses.create({
          model: 'fake-chat-1',
          input: [{ role: 'user', content: [{ type: 'input_text', text: 'what' }, { type: 'input_image', image_url: host.url('metadata.test', '/x.png'), detail: 'auto' }] }],
        }),
      );
      expect(err).toMatchObject({ status: 400, code: 'invalid_request', param: 'input[0].content[1].image_url' });
      expect(host.requests).toEqual([]);
      expect(fake.calls.chat).toBe(0);
    });

    it('fetches an allowed input_image for the model server', async () => {
      const answer = await (await openai()).responses.create({
        model: 'fake-chat-1',
        input: [{ role: 'user', content: [{ type: 'input_text', text: 'what' }, { type: 'input_image', image_url: host.url('images.test', '/cat.png'), detail: 'low' }] }],
      });
      expect(answer.output_text).toBe('echo: what');
      expect(fake.lastBody.chat).toMatchObject({ messages: [{ content: [{}, { image_url: { url: `data:image/png;base64,${TINY_PNG.toString('base64')}`, detail: 'low' } }] }] });
    });
  });

  describe('Messages (@anthropic-ai/sdk)', () => {
    it('refuses a url image source whose name resolves to the metadata address: Anthropic\'s error naming the source', async () => {
      const err = await rejection(
        (await anthropic()).messages.create({
          model: 'fake-chat-1',
          max_tokens: 20,
          messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'url', url: host.url('metadata.test', '/latest/meta-data/') } }, { type: 'text', text: 'what' }] }],
        }),
      );
      expect(err).toBeInstanceOf(AnthropicBadRequest);
      expect((err as AnthropicBadRequest).error).toMatchObject({
        type: 'error',
        error: { type: 'invalid_request_error', message: "messages[0].content[0].source.url: the image URL's host does not resolve to public addresses only." },
      });
      expect(host.requests).toEqual([]);
      expect(fake.calls.chat).toBe(0);
    });

    it('refuses a base64 source that is not an image', async () => {
      const err = await rejection(
        (await anthropic()).messages.create({
          model: 'fake-chat-1',
          max_tokens: 20,
          messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/svg+xml' as 'image/png', data: 'PHN2Zz4=' } }] }],
        }),
      );
      expect(err).toMatchObject({ status: 400, error: { error: { message: expect.stringMatching(/^messages\[0\]\.content\[0\]\.source\.media_type must be one of/) } } });
      expect(fake.calls.chat).toBe(0);
    });

    it('fetches an allowed url image source and sends the model server a data: URL', async () => {
      const message = await (await anthropic()).messages.create({
        model: 'fake-chat-1',
        max_tokens: 20,
        messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'url', url: host.url('images.test', '/cat.png') } }, { type: 'text', text: 'what' }] }],
      });
      expect(message.content).toEqual([{ type: 'text', text: 'echo: what' }]);
      expect(fake.lastBody.chat).toMatchObject({ messages: [{ content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${TINY_PNG.toString('base64')}` } }, { type: 'text' }] }] });
    });
  });
});
