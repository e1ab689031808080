import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ProviderEvents } from '@openfeature/server-sdk';
import type { FlagDefinition, SegmentDefinition } from '@flagship/flag-evaluation';
import { segmentDefinition } from '@flagship/testing';
import { FlagshipInProcessProvider } from './in-process-provider';

/**
 * What the provider makes of the flag-data stream's segments and of OpenFeature's flat contexts,
 * against a loopback server that sends the events a test writes (the whole round trip against a
 * real management-api is in apps/management-api/src/flags/in-process-provider.int-spec.ts).
 */
describe('FlagshipInProcessProvider: segments and context kinds', () => {
  let server: Server;
  let stream: ServerResponse | undefined;
  let provider: FlagshipInProcessProvider;
  const changed: string[][] = [];
  let id = 0;

  const send = (event: string, data: unknown) => stream!.write(`id: t:${++id}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  const segment = (key: string, overrides: Partial<SegmentDefinition> = {}) => segmentDefinition(key, { version: 1, ...overrides });
  const gated = (key: string, segmentKey: string): FlagDefinition => ({
    key,
    type: 'boolean',
    defaultValue: false,
    enabled: true,
    variations: [true, false].map((value) => ({ id: String(value), name: String(value), value, weight: 0 })),
    targets: [],
    rules: [{ id: 'in-segment', clauses: [{ attribute: 'key', op: 'segmentMatch', values: [segmentKey] }], variationId: 'true' }],
    prerequisites: [],
  });
  const plain: FlagDefinition = { ...gated('plain', 'x'), rules: [] };
  const value = (flagKey: string, context: Record<string, unknown>) => provider.resolve(flagKey, 'unset', context as never, 'boolean');
  async function until(what: string, check: () => boolean): Promise<void> {
    const deadline = Date.now() + 5000;
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; heard ${JSON.stringify(changed)}`);
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  beforeAll(async () => {
    server = createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      stream = res;
      send('put', {
        flags: [gated('beta-only', 'beta'), gated('orgs', 'big-orgs'), plain],
        segments: [segment('beta', { included: ['u1'] }), segment('big-orgs', { includedContexts: [{ contextKind: 'organization', values: ['acme'] }] })],
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    provider = new FlagshipInProcessProvider({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, auth: { idToken: 'token' }, inactivityTimeoutMs: 60_000 });
    provider.events.addHandler(ProviderEvents.ConfigurationChanged, (details) => changed.push((details as { flagsChanged?: string[] } | undefined)?.flagsChanged ?? []));
    await provider.initialize();
  });

  afterAll(async () => {
    stream?.end();
    await provider.onClose();
    await new Promise((resolve) => server.close(resolve));
  });

  it('evaluates segmentMatch against the segments of the put, and reads a flat context with kinds as LaunchDarkly’s OpenFeature providers do', () => {
    expect(value('beta-only', { targetingKey: 'u1' })).toMatchObject({ value: true, reason: 'TARGETING_MATCH', flagMetadata: { ruleId: 'in-segment' } });
    expect(value('beta-only', { targetingKey: 'u2' })).toMatchObject({ value: false, reason: 'DEFAULT' });
    // `kind` selects the kind: an organization keyed u1 is not the user u1.
    expect(value('beta-only', { kind: 'organization', targetingKey: 'u1' }).value).toBe(false);
    expect(value('orgs', { kind: 'organization', targetingKey: 'acme' }).value).toBe(true);
    // Multi-kind: one nested object per kind, each keyed by its targetingKey (or key).
    expect(value('orgs', { kind: 'multi', user: { targetingKey: 'u9' }, organization: { targetingKey: 'acme', plan: 'pro' } }).value).toBe(true);
    expect(value('beta-only', { kind: 'multi', user: { key: 'u1' }, organization: { key: 'other' } }).value).toBe(true);
  });

  it('a malformed context is INVALID_CONTEXT naming the field; one without a key stays TARGETING_KEY_MISSING', () => {
    expect(value('plain', { kind: 'multi', user: { name: 'no key' } })).toMatchObject({ value: 'unset', reason: 'ERROR', errorCode: 'INVALID_CONTEXT', errorMessage: expect.stringContaining('context.user.key') });
    expect(value('plain', { kind: 'not a kind!', targetingKey: 'k' })).toMatchObject({ errorCode: 'INVALID_CONTEXT', errorMessage: expect.stringContaining('context.kind') });
    expect(value('plain', { country: 'NO' })).toMatchObject({ errorCode: 'TARGETING_KEY_MISSING' });
  });

  it('a patched segment changes the answers at once and is told as a change of the flags that match segments', async () => {
    changed.length = 0;
    send('patch', { flags: [], segments: [segment('beta', { included: ['u2'], version: 2 })] });
    await until('the segment patch', () => changed.length > 0);
    expect(changed[0]!.sort()).toEqual(['beta-only', 'orgs']);
    expect(value('beta-only', { targetingKey: 'u1' }).value).toBe(false);
    expect(value('beta-only', { targetingKey: 'u2' }).value).toBe(true);
  });

  it('a flag patched with a new segment it names matches through it; a segment deleted (segmentKeys) matches no one', async () => {
    changed.length = 0;
    send('patch', { flags: [gated('plain', 'new')], segments: [segment('new', { included: ['u5'] })] });
    await until('the flag and segment patch', () => changed.length > 0);
    expect(value('plain', { targetingKey: 'u5' }).value).toBe(true);

    changed.length = 0;
    send('delete', { keys: [], segmentKeys: ['new'] });
    await until('the segment delete', () => changed.length > 0);
    expect(changed[0]).toContain('plain');
    expect(value('plain', { targetingKey: 'u5' })).toMatchObject({ value: false, reason: 'DEFAULT' });
  });

  it('a new put (a reconnection) replaces the segments with its own, and tells the change', async () => {
    changed.length = 0;
    send('put', { flags: [gated('beta-only', 'beta')], segments: [segment('beta', { included: ['u7'], version: 3 })] });
    await until('the put', () => changed.length > 0);
    expect(value('beta-only', { targetingKey: 'u7' }).value).toBe(true);
    expect(value('orgs', { kind: 'organization', targetingKey: 'acme' }).errorCode).toBe('FLAG_NOT_FOUND');
  });
});
