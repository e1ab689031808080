import type { IncomingMessage } from 'node:http';
import { addressBucket, clientAddress, markTrustedHops } from './client-address';

// Express's own resolver (what `trust proxy` with a number runs), to hold ours to exactly its answers.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const proxyaddr = require('proxy-addr') as (req: unknown, trust: (addr: string, i: number) => boolean) => string;

const request = (xff: string | undefined, peer = '10.0.0.9'): IncomingMessage =>
  ({ socket: { remoteAddress: peer }, headers: xff === undefined ? {} : { 'x-forwarded-for': xff } }) as unknown as IncomingMessage;

describe('clientAddress', () => {
  const headers = [undefined, '', '203.0.113.7', '198.51.100.1, 203.0.113.7', ' 1.1.1.1 ,2.2.2.2,  3.3.3.3 ', '1.1.1.1,,2.2.2.2', ', ,', '2001:db8::1, 203.0.113.7'];

  it.each(headers.flatMap((h) => [0, 1, 2, 3, 5].map((hops) => [h, hops] as const)))('X-Forwarded-For %p with %p trusted hops: as Express resolves it', (xff, hops) => {
    const req = request(xff);
    expect(clientAddress(req, hops)).toBe(proxyaddr(req, (_addr, i) => i < hops));
  });

  it('0 hops (the default) never reads X-Forwarded-For: a spoofed header changes nothing', () => {
    expect(clientAddress(request('6.6.6.6'))).toBe('10.0.0.9');
  });

  it('reads the hop count the platform marked on the request', () => {
    const req = request('6.6.6.6, 203.0.113.7');
    markTrustedHops(req, 1);
    expect(clientAddress(req)).toBe('203.0.113.7');
  });
});

describe('addressBucket: the network an address is counted under', () => {
  it('counts an IPv4 address (and an IPv4-mapped IPv6 one) as itself', () => {
    expect(addressBucket('203.0.113.7')).toBe('203.0.113.7');
    expect(addressBucket('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(addressBucket('::FFFF:203.0.113.7')).toBe('203.0.113.7');
  });

  it('counts an IPv6 address under its /64, however it is written', () => {
    const bucket = '2001:db8:aa:1::/64';
    for (const a of ['2001:db8:aa:1::1', '2001:db8:aa:1:ffff:ffff:ffff:ffff', '2001:0DB8:00aa:0001:0:0:0:2', '2001:db8:aa:1::7%eth0', '2001:db8:aa:1:0:0:1.2.3.4']) {
      expect(addressBucket(a)).toBe(bucket);
    }
    expect(addressBucket('2001:db8:aa:2::1')).toBe('2001:db8:aa:2::/64');
    expect(addressBucket('::1')).toBe('0:0:0:0::/64');
    expect(addressBucket('2001:db8::')).toBe('2001:db8:0:0::/64');
    expect(addressBucket('64:ff9b::192.0.2.1')).toBe('64:ff9b:0:0::/64');
  });

  it('counts what is not an address as it is, bounded', () => {
    expect(addressBucket('unknown')).toBe('unknown');
    expect(addressBucket('x'.repeat(500))).toHaveLength(100);
  });
});
