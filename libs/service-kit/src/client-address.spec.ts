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

describe('addressBucket', () => {
  it.each([
    ['203.0.113.7', '203.0.113.7'],
    ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2::/64'],
    // Privacy addresses of one household rotate within its /64: they all count as one.
    ['2001:0db8:0001:0002:a1b2:c3d4:e5f6:0708', '2001:db8:1:2::/64'],
    ['2001:DB8:1:2::99', '2001:db8:1:2::/64'],
    ['2001:db8::1', '2001:db8:0:0::/64'],
    ['2001:db8:1:3::1', '2001:db8:1:3::/64'],
    ['fe80::1%eth0', 'fe80:0:0:0::/64'],
    ['::1', '0:0:0:0::/64'],
    ['::', '0:0:0:0::/64'],
    ['1::', '1:0:0:0::/64'],
    // IPv4 as a dual-stack socket reports it, in both notations, and through NAT64: the IPv4 address.
    ['::ffff:203.0.113.7', '203.0.113.7'],
    ['::FFFF:cb00:7107', '203.0.113.7'],
    ['64:ff9b::198.51.100.1', '198.51.100.1'],
    // An IPv4 tail elsewhere is just the low 32 bits of an IPv6 address.
    ['2001:db8:1:2::198.51.100.1', '2001:db8:1:2::/64'],
    ['unknown', 'unknown'],
    ['not:an:address', 'not:an:address'],
    ['2001:db8:aa:1:ffff:ffff:ffff:ffff', '2001:db8:aa:1::/64'],
    ['2001:db8:aa:1::7%eth0', '2001:db8:aa:1::/64'],
    ['2001:db8:aa:1:0:0:1.2.3.4', '2001:db8:aa:1::/64'],
    ['::FFFF:203.0.113.7', '203.0.113.7'],
  ])('%s counts as %s', (address, group) => {
    expect(addressBucket(address)).toBe(group);
  });

  it('cuts what is not an address to 100 characters: it is the key of a count', () => {
    expect(addressBucket('x'.repeat(500))).toHaveLength(100);
  });
});
