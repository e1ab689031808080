import { LiveFlagSet } from '@flagship/flag-evaluation';
import { type FlagSource, FlagsChangedListeners, type FlagSourceStatus, type FlagsChangedListener } from '../sources/flag-source';
import { type RefetchEvent, RefetchEvents } from './refetch-events';

/** A FlagSource whose changes the test applies (the interface only; no I/O). */
class TestSource implements FlagSource {
  readonly liveSet = LiveFlagSet.of([]);
  private readonly listeners = new FlagsChangedListeners();
  status(): FlagSourceStatus {
    return { kind: 'embedded' };
  }
  onChange(listener: FlagsChangedListener): () => void {
    return this.listeners.add(listener);
  }
  change(at: number): void {
    this.listeners.emit({ keys: ['k'], at });
  }
}

/** The event a broadcast frame is, as RefetchEvents holds it. */
const eventOf = (frame: Buffer): RefetchEvent => {
  const id = Number(/^id: (\d+)\n/.exec(frame.toString())![1]);
  return { id, at: id, frame };
};
const data = (e: RefetchEvent) => JSON.parse(/data: (.*)\n/.exec(e.frame.toString())![1]!) as Record<string, unknown>;

describe('RefetchEvents', () => {
  let source: TestSource;
  let published: RefetchEvent[];
  let refetches: RefetchEvents;

  beforeEach(() => {
    jest.useFakeTimers({ now: Date.parse('2026-11-25T12:00:00Z') });
    source = new TestSource();
    published = [];
    const streams = { broadcast: (frame: Buffer) => published.push(eventOf(frame)) };
    refetches = new RefetchEvents(source, streams, { coalesceMs: 20, historyMax: 3, historyMaxAgeMs: 60_000, freshConnectMs: 10_000 });
  });

  afterEach(() => {
    refetches.close();
    jest.useRealTimers();
  });

  it('starts at the time the flags were loaded and tells each change as ADR-0008 frames it', () => {
    expect(refetches.version).toBe(source.liveSet.updatedAt);
    const at = Date.now() + 5;
    source.change(at);
    jest.advanceTimersByTime(20);
    expect(published).toHaveLength(1);
    expect(published[0]!.frame.toString()).toBe(
      `id: ${at}\nevent: message\ndata: {"type":"refetchEvaluation","etag":"\\"${at}\\"","lastModified":${Math.floor(at / 1000)}}\n\n`,
    );
    expect(refetches.etag).toBe(`"${at}"`);
  });

  it('coalesces a burst into one event carrying the last change, and keeps ids increasing even when clocks do not', () => {
    const t = Date.now();
    source.change(t + 1);
    source.change(t + 3);
    source.change(t + 2);
    jest.advanceTimersByTime(20);
    expect(published.map((e) => e.id)).toEqual([t + 3]);
    source.change(t); // an earlier time than the last event
    jest.advanceTimersByTime(20);
    expect(published.map((e) => e.id)).toEqual([t + 3, t + 4]);
    expect(data(published[1]!)).toMatchObject({ etag: `"${t + 4}"` });
  });

  it('a first connection (no Last-Event-ID) gets the last event while it is recent: a change between its fetch and its connect is not lost', () => {
    expect(refetches.replayAfter(undefined)).toEqual([]);
    source.change(Date.now());
    jest.advanceTimersByTime(20);
    const [last] = published;
    expect(refetches.replayAfter(undefined)).toEqual([last]);
    jest.advanceTimersByTime(10_000);
    expect(refetches.replayAfter(undefined)).toEqual([]);
  });

  it('replays after a Last-Event-ID inside the window; outside it, or unknown, one event naming the current version', () => {
    const ids: number[] = [];
    for (let i = 1; i <= 5; i++) {
      source.change(Date.now() + i);
      jest.advanceTimersByTime(20);
      ids.push(published[published.length - 1]!.id);
    }
    // The window holds the last 3.
    expect(refetches.replayAfter(String(ids[2])).map((e) => e.id)).toEqual([ids[3], ids[4]]);
    expect(refetches.replayAfter(String(ids[4]))).toEqual([]);
    expect(refetches.replayAfter(String(ids[0])).map((e) => e.id)).toEqual([ids[4]]);
    expect(refetches.replayAfter('garbage').map((e) => e.id)).toEqual([ids[4]]);
    // And by age: after a minute the window is empty.
    jest.advanceTimersByTime(61_000);
    expect(refetches.replayAfter(String(ids[3])).map((e) => e.id)).toEqual([ids[4]]);
  });
});
