import { type ReplayEntry, ReplayLog } from './replay-log';

const at = Date.parse('2026-11-29T12:00:00Z');
const entry = (id: number, frame = `id: ${id}\ndata: {}\n\n`, when = at): ReplayEntry => ({ id, frame, at: when });

describe('ReplayLog', () => {
  it('gives the events after a known id; none for the newest; cannot place an id ahead of it or before what it holds', () => {
    const log = new ReplayLog({ maxEvents: 10 });
    log.append(entry(1));
    log.append(entry(2));
    expect(log.after(0, at)!.map((e) => e.id)).toEqual([1, 2]);
    expect(log.after(1, at)!.map((e) => e.id)).toEqual([2]);
    expect(log.after(2, at)).toEqual([]);
    expect(log.after(3, at)).toBeUndefined();
    expect(log.after(-1, at)).toBeUndefined();
    expect(log.after(Number.NaN, at)).toBeUndefined();
    expect(() => log.append(entry(2))).toThrow('replay log ids must increase');
    // Ids need not be dense (times, say): an id between two held ones gets those after it.
    const sparse = new ReplayLog({ maxEvents: 10 }, 1000);
    sparse.append(entry(1010));
    sparse.append(entry(1020));
    expect(sparse.after(1015, at)!.map((e) => e.id)).toEqual([1020]);
    expect([sparse.after(999, at), sparse.lastId, sparse.oldest?.id, sparse.newest?.id]).toEqual([undefined, 1020, 1010, 1020]);
  });

  it('keeps at most maxEvents: an id older than what it holds cannot be placed', () => {
    const log = new ReplayLog({ maxEvents: 512 });
    for (let i = 1; i <= 600; i++) log.append(entry(i, '{"flags":[]}'));
    expect(log.size).toBe(512);
    expect(log.after(0, at)).toBeUndefined();
    expect(log.after(88, at)!.length).toBe(512);
    expect(log.after(87, at)).toBeUndefined();
  });

  it('keeps at most maxBytes of frames, even dropping an event too large alone', () => {
    const log = new ReplayLog({ maxEvents: 512, maxBytes: 512 * 1024 });
    const data = `{"flags":[${JSON.stringify('y'.repeat(100_000))}]}`;
    for (let i = 1; i <= 10; i++) log.append(entry(i, data));
    expect(log.byteLength).toBeLessThanOrEqual(512 * 1024);
    expect(log.size).toBe(5);
    expect(log.after(5, at)!.length).toBe(5);
    expect(log.after(4, at)).toBeUndefined();
    log.append(entry(11, 'x'.repeat(600 * 1024)));
    expect([log.size, log.byteLength, log.after(10, at), log.after(11, at)]).toEqual([0, 0, undefined, []]);
  });

  it('keeps none older than maxAgeMs, trimmed as it is read too', () => {
    const log = new ReplayLog({ maxEvents: 10, maxAgeMs: 60_000 }, 0);
    log.append(entry(1, 'a', at));
    log.append(entry(2, 'b', at + 30_000));
    expect(log.after(0, at + 60_000)!.map((e) => e.id)).toEqual([1, 2]);
    expect(log.after(0, at + 60_001)).toBeUndefined();
    expect(log.after(1, at + 60_001)!.map((e) => e.id)).toEqual([2]);
    log.trim(at + 90_001);
    expect([log.size, log.oldest, log.after(2, at + 90_001)]).toEqual([0, undefined, []]);
  });
});
