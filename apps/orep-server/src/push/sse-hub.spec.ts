import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { SseHub } from './sse-hub';

/** A stream as the hub uses it: ending or destroying it closes it, as node:http does. */
class FakeStream extends EventEmitter {
  writableLength = 0;
  destroyed = false;
  writableEnded = false;
  ended = false;
  readonly written: string[] = [];
  write(frame: Buffer): boolean {
    this.written.push(frame.toString());
    return true;
  }
  end(): void {
    this.ended = this.writableEnded = true;
    this.emit('close');
  }
  destroy(): void {
    this.destroyed = true;
    this.emit('close');
  }
}

const stream = () => new FakeStream() as FakeStream & ServerResponse;

describe('SseHub', () => {
  const options = { maxConnections: 100, maxPerAddress: 2, maxBufferedBytes: 1024, heartbeatMs: 60_000 };
  let hub: SseHub;

  beforeEach(() => {
    jest.useFakeTimers({ now: Date.parse('2026-11-29T12:00:00Z') });
    hub = new SseHub(options);
  });
  afterEach(() => {
    hub.close();
    jest.useRealTimers();
  });

  it('ends a stream when its token expires, each at its own expiry, and leaves the rest open', () => {
    const now = Date.now();
    const soon = stream();
    const later = stream();
    const header = stream();
    hub.add(soon, '10.0.0.1', { keyId: 'k', expiresAt: now + 2000 });
    hub.add(later, '10.0.0.2', { keyId: 'k', expiresAt: now + 5000 });
    hub.add(header, '10.0.0.3', { keyId: 'server' });
    jest.advanceTimersByTime(1999);
    expect([soon.ended, later.ended, hub.size]).toEqual([false, false, 3]);
    jest.advanceTimersByTime(1);
    expect([soon.ended, later.ended, hub.size]).toEqual([true, false, 2]);
    // An earlier expiry added after a later one is armed for its own time.
    const earlier = stream();
    hub.add(earlier, '10.0.0.4', { keyId: 'k', expiresAt: now + 3000 });
    jest.advanceTimersByTime(1000);
    expect([earlier.ended, later.ended]).toEqual([true, false]);
    jest.advanceTimersByTime(2000);
    expect([later.ended, header.ended, hub.size, hub.accessEnded]).toEqual([true, false, 1, 3]);
  });

  it('a stream that closed before its expiry leaves nothing behind to end', () => {
    const s = stream();
    hub.add(s, '10.0.0.1', { keyId: 'k', expiresAt: Date.now() + 1000 });
    s.destroy();
    jest.advanceTimersByTime(2000);
    expect([hub.size, hub.accessEnded]).toEqual([0, 0]);
  });

  it("ends the streams of a key rotated out, and only those; one whose client is not reading is cut off", () => {
    const a = stream();
    const b = stream();
    const slow = stream();
    const other = stream();
    hub.add(a, '10.0.0.1', { keyId: 'old' });
    hub.add(b, '10.0.0.2', { keyId: 'old', expiresAt: Date.now() + 60_000 });
    slow.writableLength = 10;
    hub.add(slow, '10.0.0.3', { keyId: 'old' });
    hub.add(other, '10.0.0.4', { keyId: 'new' });
    hub.endKeys(new Set(['old']));
    expect([a.ended, b.ended, slow.destroyed, other.ended || other.destroyed, hub.size]).toEqual([true, true, true, false, 1]);
  });

  it('counts an IPv6 client per /64: privacy addresses of one household share its allowance', () => {
    hub.add(stream(), '2001:db8:1:2::a', { keyId: 'k' });
    hub.add(stream(), '2001:db8:1:2:3:4:5:6', { keyId: 'k' });
    expect(hub.admit('2001:db8:1:2:ffff::1', { keyId: 'k' })).toBe('address');
    expect(hub.add(stream(), '2001:db8:1:3::1', { keyId: 'k' })).toEqual({ ok: true });
    // IPv4 as a dual-stack socket reports it is the same client as plain IPv4.
    hub.add(stream(), '::ffff:203.0.113.7', { keyId: 'k' });
    hub.add(stream(), '203.0.113.7', { keyId: 'k' });
    expect(hub.add(stream(), '203.0.113.7', { keyId: 'k' })).toEqual({ ok: false, reason: 'address' });
    expect(hub.add(stream(), '203.0.113.8', { keyId: 'k' })).toEqual({ ok: true });
  });

  it('counts a stream from its admission, before it is answered; one never answered is released; past maxConnections it is full', () => {
    const small = new SseHub({ ...options, maxConnections: 2, maxPerAddress: 0 });
    const first = small.admit('10.0.0.1', { keyId: 'k' });
    expect(typeof first).toBe('object');
    expect(small.add(stream(), '10.0.0.2', { keyId: 'k' })).toEqual({ ok: true });
    expect(small.admit('10.0.0.3', { keyId: 'k' })).toBe('full');
    if (typeof first === 'object') small.release(first);
    expect(small.add(stream(), '10.0.0.3', { keyId: 'k' })).toEqual({ ok: true });
    small.close();
    expect(small.admit('10.0.0.4', { keyId: 'k' })).toBe('full');
  });
});
