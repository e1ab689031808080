import type { AdmissionBound } from './admission';
import { SseHub, type SseHubOptions } from './sse-hub';
import { FakeSink } from './sse-sink.fake';

interface Stream {
  n: number;
  tenant: string;
  address: string;
  paid?: boolean;
}
type Reason = 'expired' | 'withdrawn' | 'shed' | 'shutdown';

let n = 0;
const stream = (over: Partial<Stream> = {}): Stream => ({ n: ++n, tenant: `t${n}`, address: `10.0.0.${n}`, ...over });

const BOUNDS: Array<AdmissionBound<Stream>> = [
  { name: 'tenant', key: (s) => s.tenant, limit: (s) => (s.paid ? 3 : 2) },
  { name: 'address', key: (s) => (s.address === 'unbounded' ? undefined : s.address), limit: () => 2 },
  { name: 'process', key: () => '', limit: () => 4, giveWay: (s, held) => (s.paid ? [...held].filter((h) => !h.paid).at(-1) : undefined) },
];

describe('SseHub', () => {
  const hubs: Array<SseHub<Stream, Reason>> = [];
  const open = (options: Partial<SseHubOptions<Stream, Reason>> = {}) => {
    const hub = new SseHub<Stream, Reason>({ bounds: BOUNDS, maxBufferedBytes: 100, heartbeatMs: 1000, ...options });
    hubs.push(hub);
    return hub;
  };
  /** Admitted and answered. */
  const held = (hub: SseHub<Stream, Reason>, over: Partial<Stream> = {}, sink = new FakeSink()) => {
    const s = stream(over);
    expect(hub.admit(s)).toEqual({ admitted: true });
    expect(hub.attach(s, sink)).toBe(true);
    return { s, sink };
  };

  beforeEach(() => {
    jest.useFakeTimers({ now: Date.parse('2026-11-29T12:00:00Z') });
  });
  afterEach(() => {
    for (const h of hubs.splice(0)) h.close('shutdown');
    jest.useRealTimers();
  });

  describe('admission', () => {
    it('checks the bounds in order: the first reached refuses, naming itself and its limit; a bound whose key is undefined does not apply', () => {
      const hub = open();
      expect(hub.admit(stream({ tenant: 'a', address: 'x' })).admitted).toBe(true);
      expect(hub.admit(stream({ tenant: 'a', address: 'x' })).admitted).toBe(true);
      expect(hub.admit(stream({ tenant: 'a', address: 'x' }))).toEqual({ admitted: false, bound: 'tenant', limit: 2 });
      expect(hub.admit(stream({ tenant: 'b', address: 'x' }))).toEqual({ admitted: false, bound: 'address', limit: 2 });
      expect(hub.admit(stream({ tenant: 'b', address: 'unbounded' })).admitted).toBe(true);
      // The limit may depend on the stream asking.
      expect(hub.admit(stream({ tenant: 'a', address: 'y', paid: true })).admitted).toBe(true);
      expect([hub.size, hub.count('tenant', 'a'), hub.count('address', 'x')]).toEqual([4, 3, 2]);
    });

    it('counts a stream from its admission, before it is answered; a refused one counts nowhere; a released one frees every count it held, once', () => {
      const hub = open();
      const first = stream({ tenant: 'a', address: 'x' });
      expect(hub.admit(first).admitted).toBe(true);
      for (let i = 0; i < 3; i++) expect(hub.admit(stream({ tenant: 'a' })).admitted).toBe(i === 0);
      expect(hub.size).toBe(2);
      hub.release(first);
      hub.release(first);
      expect([hub.size, hub.count('tenant', 'a'), hub.count('address', 'x')]).toEqual([1, 1, 0]);
    });

    it('at a bound with giveWay: admitted in place of the stream it names, which is released and left for the caller to end; at most one per admission', () => {
      const hub = open();
      const free = [stream(), stream(), stream()];
      const paid = stream({ paid: true });
      for (const s of [free[0]!, paid, free[1]!, free[2]!]) expect(hub.admit(s).admitted).toBe(true);
      expect(hub.admit(stream())).toEqual({ admitted: false, bound: 'process', limit: 4 });
      const newcomer = stream({ paid: true });
      expect(hub.admit(newcomer)).toEqual({ admitted: true, shed: free[2] });
      expect([...hub.streams()]).toEqual([free[0], paid, free[1], newcomer]);
      expect(hub.admit(stream({ paid: true }))).toEqual({ admitted: true, shed: free[1] });
      expect(hub.admit(stream({ paid: true }))).toEqual({ admitted: true, shed: free[0] });
      // No free stream left to give way.
      expect(hub.admit(stream({ paid: true }))).toMatchObject({ admitted: false, bound: 'process' });
    });

    it('after close, refuses every stream', () => {
      const hub = open();
      hub.close('shutdown');
      expect(hub.admit(stream())).toEqual({ admitted: false, bound: 'closed', limit: 0 });
    });
  });

  it('heartbeats every answered stream at the interval, none before it is answered, and stops when none is left', () => {
    const hub = open({ heartbeat: ': hi\n\n' });
    const unanswered = stream();
    hub.admit(unanswered);
    const { sink } = held(hub);
    jest.advanceTimersByTime(999);
    expect(sink.written).toEqual([]);
    jest.advanceTimersByTime(1);
    jest.advanceTimersByTime(1000);
    expect(sink.written).toEqual([': hi\n\n', ': hi\n\n']);
    sink.destroy();
    expect(jest.getTimerCount()).toBe(0);
    expect(hub.size).toBe(1); // the unanswered one still counts
  });

  it('broadcasts one frame to every answered stream, and cuts off a client that left more than maxBufferedBytes unread', () => {
    const cut: number[] = [];
    const hub = open({ onCutOff: (_s, unsent) => cut.push(unsent) });
    const reader = held(hub);
    const slow = held(hub, {}, new FakeSink(false));
    hub.broadcast('data: 1234567890123456789012345678901234567890123456789\n\n'); // 57 bytes
    hub.broadcast('data: 1234567890123456789012345678901234567890123456789\n\n'); // 114 unread after it
    expect(slow.sink.destroyed).toBe(false);
    hub.broadcast('data: x\n\n');
    expect([slow.sink.destroyed, hub.cutOff, cut]).toEqual([true, 1, [114]]);
    expect(reader.sink.written).toHaveLength(3);
    expect(hub.size).toBe(1);
  });

  it('writes a paced message one piece at a time as the client reads, what comes meanwhile after it, bounded alike', async () => {
    const hub = open({ maxBufferedBytes: 30 });
    const { s, sink } = held(hub, {}, new FakeSink(false, 10));
    let done: boolean | undefined;
    void hub.writePaced(s, ['put-1:abcdefghij', 'put-2:abcdefghij', 'put-3\n\n']).then((ok) => (done = ok));
    await Promise.resolve();
    expect(sink.written).toEqual(['put-1:abcdefghij']);
    hub.write(s, 'patch\n\n');
    hub.broadcast('beat\n\n');
    sink.read();
    await Promise.resolve();
    expect(sink.written).toEqual(['put-1:abcdefghij', 'put-2:abcdefghij']);
    sink.read();
    await jest.advanceTimersByTimeAsync(0);
    expect(done).toBe(true);
    expect(sink.written).toEqual(['put-1:abcdefghij', 'put-2:abcdefghij', 'put-3\n\n', 'patch\n\n', 'beat\n\n']);

    // What waits behind a paced write is bounded: past it the client is cut off, and the write says so.
    const other = held(hub, {}, new FakeSink(false, 10));
    const paced = hub.writePaced(other.s, ['big-put-piece', 'rest']);
    for (let i = 0; i < 5; i++) hub.write(other.s, 'patch:0123456789\n\n');
    expect(other.sink.destroyed).toBe(true);
    expect(await paced).toBe(false);
  });

  describe('ends', () => {
    it('tells the client why (endFrame) and lets it go; it no longer counts; a second end does nothing', () => {
      const hub = open({ endFrame: (r) => `event: end\ndata: {"reason":"${r}"}\n\n` });
      const { s, sink } = held(hub, { tenant: 'a' });
      hub.end(s, 'withdrawn');
      hub.end(s, 'expired');
      expect([sink.endedWith, hub.count('tenant', 'a'), hub.endedWhy(s)]).toEqual(['event: end\ndata: {"reason":"withdrawn"}\n\n', 0, 'withdrawn']);
      expect(hub.ends).toEqual(new Map([['withdrawn', 1]]));
    });

    it('without an endFrame a client that reads is ended, one that left bytes unread is cut off; so is one mid-way through a paced write', async () => {
      const hub = open();
      const reading = held(hub);
      const unread = held(hub, {}, new FakeSink(false));
      hub.write(unread.s, 'data: x\n\n');
      hub.endWhere(() => true, 'withdrawn');
      expect([reading.sink.endedWith, reading.sink.destroyed, unread.sink.destroyed]).toEqual(['', false, true]);

      const framed = open({ endFrame: (r) => `event: end\ndata: ${r}\n\n` });
      const mid = held(framed, {}, new FakeSink(false, 4));
      const paced = framed.writePaced(mid.s, ['piece-1', 'piece-2']);
      framed.end(mid.s, 'shed');
      expect([mid.sink.destroyed, mid.sink.text]).toEqual([true, 'piece-1']);
      expect(await paced).toBe(false);
    });

    it('a stream ended before it is answered keeps its reason (for its refusal) and cannot be attached', () => {
      const hub = open();
      const s = stream();
      hub.admit(s);
      hub.end(s, 'shed');
      expect([hub.endedWhy(s), hub.attach(s, new FakeSink()), hub.size]).toEqual(['shed', false, 0]);
    });

    it('endWhere ends the streams the predicate picks, and only those', () => {
      const hub = open();
      const a = held(hub, { tenant: 'gone' });
      const b = held(hub, { tenant: 'gone' });
      const c = held(hub, { tenant: 'kept' });
      hub.endWhere((s) => s.tenant === 'gone', 'withdrawn');
      expect([a.sink.writableEnded, b.sink.writableEnded, c.sink.writableEnded, hub.size]).toEqual([true, true, false, 1]);
    });

    it('at a deadline per stream, each at its own time; an earlier one set later is armed for its own time; a stream gone first leaves nothing', () => {
      const hub = open();
      const now = Date.now();
      const soon = held(hub);
      const later = held(hub);
      const none = held(hub);
      hub.deadline(soon.s, now + 2000, 'expired');
      hub.deadline(later.s, now + 5000, 'withdrawn');
      jest.advanceTimersByTime(1999);
      expect([soon.sink.writableEnded, hub.size]).toEqual([false, 3]);
      jest.advanceTimersByTime(1);
      expect([soon.sink.writableEnded, later.sink.writableEnded, hub.endedWhy(soon.s)]).toEqual([true, false, 'expired']);
      const earlier = held(hub);
      hub.deadline(earlier.s, now + 3000, 'expired');
      const closes = held(hub);
      hub.deadline(closes.s, now + 3000, 'expired');
      closes.sink.destroy();
      jest.advanceTimersByTime(1000);
      expect([earlier.sink.writableEnded, later.sink.writableEnded, hub.endedWhy(closes.s)]).toEqual([true, false, undefined]);
      jest.advanceTimersByTime(2000);
      expect([later.sink.writableEnded, none.sink.writableEnded, hub.endedWhy(later.s), hub.size]).toEqual([true, false, 'withdrawn', 1]);
    });

    it('close ends every stream, answered or not, with its reason', () => {
      const hub = open({ endFrame: (r) => `event: end\ndata: ${r}\n\n` });
      const { sink } = held(hub);
      const unanswered = stream();
      hub.admit(unanswered);
      hub.close('shutdown');
      expect([sink.endedWith, hub.endedWhy(unanswered), hub.size, jest.getTimerCount()]).toEqual(['event: end\ndata: shutdown\n\n', 'shutdown', 0, 0]);
    });
  });
});
