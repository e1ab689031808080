import { Feed } from './flag-streams';

describe('flag-data stream feed: ids and the replay window', () => {
  it('replays the events after a known id, and cannot place ids of another epoch, malformed or ahead of it', () => {
    const feed = new Feed('t', 'production');
    const start = feed.eventId();
    feed.append('patch', '{"flags":[]}');
    feed.append('delete', '{"keys":["a"]}');
    expect(feed.since(start)!.map((e) => e.seq)).toEqual([1, 2]);
    expect(feed.since(feed.eventId(1))!.map((e) => e.seq)).toEqual([2]);
    expect(feed.since(feed.eventId())).toEqual([]);
    for (const id of [undefined, 'x', `${feed.epoch}:3`, `other:1`, `${feed.epoch}:-1`, `${feed.epoch}:1:2`]) expect(feed.since(id)).toBeUndefined();
    expect(new Feed('t', 'production').since(start)).toBeUndefined(); // a new feed is a new epoch
  });

  it('keeps at most 512 events and 512 KB of them: an id older than that gets a put', () => {
    const feed = new Feed('t', 'production');
    const start = feed.eventId();
    for (let i = 0; i < 600; i++) feed.append('patch', '{"flags":[]}');
    expect(feed.log.length).toBe(512);
    expect(feed.since(start)).toBeUndefined();
    expect(feed.since(feed.eventId(88))!.length).toBe(512);
    expect(feed.since(feed.eventId(87))).toBeUndefined();

    const big = new Feed('t', 'production');
    const data = `{"flags":[${JSON.stringify('y'.repeat(100_000))}]}`;
    for (let i = 0; i < 10; i++) big.append('patch', data);
    expect(big.logBytes).toBeLessThanOrEqual(512 * 1024);
    expect(big.log.length).toBe(5);
    expect(big.since(big.eventId(5))!.length).toBe(5);
    expect(big.since(big.eventId(4))).toBeUndefined();
  });
});
