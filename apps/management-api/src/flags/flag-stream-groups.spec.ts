import type { FlagDefinition } from '@flagship/flag-evaluation';
import { FlagStore } from '@flagship/flag-store';
import { FakeFlagStoreRepository } from '@flagship/flag-store/testing';
import { CHANNELS } from '@flagship/redis';
import { numberFlag } from '@flagship/testing';
import { FakePubSub } from '@flagship/redis/testing';
import { SseHub } from '@flagship/sse';
import { FakeSink } from '@flagship/sse/testing';
import { StreamGroup, type GroupedStream, FlagStreamGroups } from './flag-stream-groups';

type Stream = GroupedStream;

/** The ids of the flag-data stream; the replay window's bounds are the kit's (libs/sse replay-log.spec.ts). */
describe('flag-data stream group: ids and the replay window', () => {
  it('replays the events after a known id, and cannot place ids of another epoch, malformed or ahead of it', () => {
    const group = new StreamGroup('t', 'production');
    const start = group.eventId();
    group.append('patch', '{"flags":[]}');
    group.append('delete', '{"keys":["a"]}');
    expect(group.since(start)!.map((e) => e.id)).toEqual([1, 2]);
    expect(group.since(group.eventId(1))!.map((e) => e.id)).toEqual([2]);
    expect(group.since(group.eventId())).toEqual([]);
    expect(group.since(group.eventId(1))![0]!.frame).toBe(`id: ${group.epoch}:2\nevent: delete\ndata: {"keys":["a"]}\n\n`);
    for (const id of [undefined, 'x', `${group.epoch}:3`, `other:1`, `${group.epoch}:-1`, `${group.epoch}:1:2`]) expect(group.since(id)).toBeUndefined();
    expect(new StreamGroup('t', 'production').since(start)).toBeUndefined(); // a new group is a new epoch
  });

  it('keeps at most 512 events and 512 KB of them: an id older than that gets a put', () => {
    const group = new StreamGroup('t', 'production');
    const start = group.eventId();
    for (let i = 0; i < 600; i++) group.append('patch', '{"flags":[]}');
    expect(group.log.size).toBe(512);
    expect(group.since(start)).toBeUndefined();
    expect(group.since(group.eventId(88))!.length).toBe(512);
    expect(group.since(group.eventId(87))).toBeUndefined();

    const big = new StreamGroup('t', 'production');
    const data = `{"flags":[${JSON.stringify('y'.repeat(100_000))}]}`;
    for (let i = 0; i < 10; i++) big.append('patch', data);
    expect(big.log.byteLength).toBeLessThanOrEqual(512 * 1024);
    expect(big.log.size).toBe(5);
    expect(big.since(big.eventId(5))!.length).toBe(5);
    expect(big.since(big.eventId(4))).toBeUndefined();
  });

  it('starting over (the store read the set anew) is a new epoch with an empty window: ids of before get a put', () => {
    const group = new StreamGroup('t', 'production');
    group.append('patch', '{"flags":[]}');
    const before = group.eventId();
    group.startOver({} as never);
    expect([group.since(before), group.since(group.eventId()), group.log.size]).toEqual([undefined, [], 0]);
  });
});

/** FlagStreamGroups over the flag store (FakePubSub, the fake repository) and the kit's hub, on the fake clock. */
describe('FlagStreamGroups', () => {
  const T = 'tenant-a';
  const E = 'production';
  let repo: FakeFlagStoreRepository;
  let pubsub: FakePubSub;
  let store: FlagStore;
  let hub: SseHub<Stream, string>;
  let groups: FlagStreamGroups<Stream>;
  const num = numberFlag;
  /** Events as a client parses them (comments left out). */
  const events = (sink: FakeSink) =>
    sink.text
      .split('\n\n')
      .filter((b) => b.startsWith('id:'))
      .map((b) => ({ id: /^id: (.*)$/m.exec(b)![1]!, event: /^event: (.*)$/m.exec(b)![1]!, data: JSON.parse(/^data: (.*)$/m.exec(b)![1]!) }));
  /** A stream admitted, answered and listening to the group of (T, environment), with its put. */
  const stream = async (environment = E) => {
    const s: Stream = {};
    const sink = new FakeSink();
    hub.admit(s);
    const { group, view } = await groups.join(T, environment);
    hub.attach(s, sink);
    groups.listen(group, s);
    sink.once('close', () => groups.leave(group, s));
    await groups.sendPut(group, s, view);
    return { s, sink, group };
  };
  const announce = (flagKey: string, environment = E) => pubsub.publish(CHANNELS.flagChanged, { tenantId: T, environment, flagKey });

  beforeEach(() => {
    jest.useFakeTimers({ now: Date.parse('2026-11-29T12:00:00Z'), doNotFake: ['nextTick', 'queueMicrotask'] });
    repo = new FakeFlagStoreRepository();
    pubsub = new FakePubSub();
    store = new FlagStore(repo, pubsub, { reconcileMs: 600_000, maxEntries: 2, keepJson: true }).start();
    hub = new SseHub<Stream, string>({ bounds: [], maxBufferedBytes: 1 << 20, heartbeatMs: 600_000 });
    groups = new FlagStreamGroups(store, hub);
  });
  afterEach(() => {
    groups.close();
    hub.close('shutdown');
    store.close();
    jest.useRealTimers();
  });

  it('puts the flags the store holds, then sends its changes as one patch and one delete, reading nothing of its own', async () => {
    for (const k of ['a', 'b', 'c']) repo.put(T, E, num(k, 1));
    const { sink } = await stream();
    const [put] = events(sink);
    expect([put!.event, put!.data.flags.map((f: FlagDefinition) => f.key).sort()]).toEqual(['put', ['a', 'b', 'c']]);
    repo.put(T, E, num('a', 2));
    repo.put(T, E, num('b', 3));
    repo.remove(T, E, 'c');
    for (const k of ['a', 'b', 'c']) await announce(k);
    await jest.advanceTimersByTimeAsync(25);
    const [, patch, del] = events(sink);
    expect(patch!.data.flags.map((f: FlagDefinition) => [f.key, f.defaultValue])).toEqual([
      ['a', 2],
      ['b', 3],
    ]);
    expect([del!.event, del!.data]).toEqual(['delete', { keys: ['c'] }]);
    // The set was read once, by the store; the changes by the store's re-reads of their keys alone.
    expect(repo.reads.slice(0, 2)).toEqual([`all ${T}/${E}`, `segments ${T}/${E}`]);
    expect(repo.reads.slice(2).join(' ').replace(/keys tenant-a\/production /g, '').split(/[ ,]/).sort()).toEqual(['a', 'b', 'c']);
  });

  it('puts the segments with the flags, then sends those that change in the patch of the flags changed meanwhile, and those deleted in a delete', async () => {
    const seg = (key: string, included: string[]) => ({ key, name: key, included, excluded: [], includedContexts: [], excludedContexts: [], rules: [] });
    repo.put(T, E, num('a', 1));
    repo.putSegment(T, E, seg('beta', ['u1']));
    repo.putSegment(T, E, seg('gamma', []));
    const { sink } = await stream();
    const [put] = events(sink);
    expect(put!.data.segments.map((x: { key: string }) => x.key).sort()).toEqual(['beta', 'gamma']);
    const segmentChanged = (segmentKey: string) => pubsub.publish(CHANNELS.flagChanged, { tenantId: T, environment: E, segmentKey, version: 2 });
    repo.putSegment(T, E, seg('beta', ['u1', 'u2']));
    repo.put(T, E, num('a', 2));
    await segmentChanged('beta');
    await announce('a');
    await jest.advanceTimersByTimeAsync(25);
    const [, patch] = events(sink);
    expect(patch!.data.flags.map((f: FlagDefinition) => [f.key, f.defaultValue])).toEqual([['a', 2]]);
    expect(patch!.data.segments.map((x: { key: string; included: string[] }) => [x.key, x.included])).toEqual([['beta', ['u1', 'u2']]]);
    // A flag change alone says nothing of the segments; a segment deleted is a delete.
    repo.put(T, E, num('a', 3));
    repo.removeSegment(T, E, 'gamma');
    await announce('a');
    await segmentChanged('gamma');
    await jest.advanceTimersByTimeAsync(25);
    const [, , patch2, del] = events(sink);
    expect(patch2!.data).toEqual({ flags: [expect.objectContaining({ key: 'a', defaultValue: 3 })] });
    expect([del!.event, del!.data]).toEqual(['delete', { keys: [], segmentKeys: ['gamma'] }]);
  });

  it('keeps a streamed set held by the store whatever else is read, without reading it again; an idle group lets go, and starts over if the set went', async () => {
    repo.put(T, E, num('a', 1));
    const { sink, group } = await stream();
    const putId = events(sink)[0]!.id;
    for (const env of ['e1', 'e2', 'e3']) await store.view(T, env);
    expect(store.peek(T, E)).toBeDefined();
    repo.put(T, E, num('a', 2));
    await announce('a');
    await jest.advanceTimersByTimeAsync(25);
    expect(events(sink).map((e) => e.event)).toEqual(['put', 'patch']);
    expect(repo.reads.filter((r) => r === `all ${T}/${E}`)).toHaveLength(1);

    sink.destroy(); // the client leaves: the group is idle
    expect(group.since(putId)).toHaveLength(1);
    await store.view(T, 'e4');
    await store.view(T, 'e5');
    expect(store.peek(T, E, { stale: true })).toBeUndefined();
    // A client resuming now cannot be told what it missed while the set was not held: a put, under a new epoch.
    const again = await stream();
    expect(group.since(putId)).toBeUndefined();
    expect(events(again.sink).map((e) => e.event)).toEqual(['put']);
    expect(events(again.sink)[0]!.id.split(':')[0]).not.toBe(putId.split(':')[0]);
  });
});
