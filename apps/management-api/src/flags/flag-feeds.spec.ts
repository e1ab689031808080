import { Feed } from './flag-feeds';

/** The ids of the flag-data stream; the replay window's bounds are the kit's (libs/sse replay-log.spec.ts). */
describe('flag-data stream feed: ids and the replay window', () => {
  it('replays the events after a known id, and cannot place ids of another epoch, malformed or ahead of it', () => {
    const feed = new Feed('t', 'production');
    const start = feed.eventId();
    feed.append('patch', '{"flags":[]}');
    feed.append('delete', '{"keys":["a"]}');
    expect(feed.since(start)!.map((e) => e.id)).toEqual([1, 2]);
    expect(feed.since(feed.eventId(1))!.map((e) => e.id)).toEqual([2]);
    expect(feed.since(feed.eventId())).toEqual([]);
    expect(feed.since(feed.eventId(1))![0]!.frame).toBe(`id: ${feed.epoch}:2\nevent: delete\ndata: {"keys":["a"]}\n\n`);
    for (const id of [undefined, 'x', `${feed.epoch}:3`, `other:1`, `${feed.epoch}:-1`, `${feed.epoch}:1:2`]) expect(feed.since(id)).toBeUndefined();
    expect(new Feed('t', 'production').since(start)).toBeUndefined(); // a new feed is a new epoch
  });

  it('keeps at most 512 events and 512 KB of them: an id older than that gets a put', () => {
    const feed = new Feed('t', 'production');
    const start = feed.eventId();
    for (let i = 0; i < 600; i++) feed.append('patch', '{"flags":[]}');
    expect(feed.log.size).toBe(512);
    expect(feed.since(start)).toBeUndefined();
    expect(feed.since(feed.eventId(88))!.length).toBe(512);
    expect(feed.since(feed.eventId(87))).toBeUndefined();

    const big = new Feed('t', 'production');
    const data = `{"flags":[${JSON.stringify('y'.repeat(100_000))}]}`;
    for (let i = 0; i < 10; i++) big.append('patch', data);
    expect(big.log.byteLength).toBeLessThanOrEqual(512 * 1024);
    expect(big.log.size).toBe(5);
    expect(big.since(big.eventId(5))!.length).toBe(5);
    expect(big.since(big.eventId(4))).toBeUndefined();
  });

  it('starting over (the store read the set anew) is a new epoch with an empty window: ids of before get a put', () => {
    const feed = new Feed('t', 'production');
    feed.append('patch', '{"flags":[]}');
    const before = feed.eventId();
    feed.startOver({} as never);
    expect([feed.since(before), feed.since(feed.eventId()), feed.log.size]).toEqual([undefined, [], 0]);
  });
});
