import type { LookupAddress, LookupOptions } from 'node:dns';
import { lookup as dnsLookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

/**
 * IPv4 blocks that are not public unicast (IANA's special-purpose address registry): this network,
 * private (RFC 1918), shared/CGNAT, loopback, link-local (cloud metadata at 169.254.169.254),
 * protocol assignments, documentation, the 6to4 relay, benchmarking, multicast, reserved and
 * broadcast.
 */
const IPV4_NOT_PUBLIC: ReadonlyArray<readonly [string, number]> = [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
];

/**
 * IPv6 is public only inside global unicast (2000::/3): that leaves out unspecified, loopback,
 * IPv4-mapped and NAT64 (which reach IPv4 addresses by another name), unique-local fc00::/7,
 * link-local and multicast. Inside it, the special-purpose blocks are left out too: IETF
 * assignments with Teredo (2001::/23), documentation, and 6to4 (2002::/16, an IPv4 address inside).
 */
const IPV6_SPECIAL: ReadonlyArray<readonly [string, number]> = [
  ['2001::', 23],
  ['2001:db8::', 32],
  ['2002::', 16],
  ['3fff::', 20],
];

const notPublicV4 = new BlockList();
for (const [net, prefix] of IPV4_NOT_PUBLIC) notPublicV4.addSubnet(net, prefix, 'ipv4');
const globalUnicast = new BlockList();
globalUnicast.addSubnet('2000::', 3, 'ipv6');
const specialV6 = new BlockList();
for (const [net, prefix] of IPV6_SPECIAL) specialV6.addSubnet(net, prefix, 'ipv6');
const loopback = new BlockList();
loopback.addSubnet('127.0.0.0', 8, 'ipv4');
loopback.addAddress('::1', 'ipv6');

/** An IP address without its IPv6 zone (`fe80::1%eth0`), and its family (0: not an address). */
function parsed(address: string): { address: string; family: 0 | 4 | 6 } {
  const bare = address.replace(/^\[(.*)\]$/, '$1').replace(/%.*$/, '');
  return { address: bare, family: isIP(bare) as 0 | 4 | 6 };
}

/**
 * Whether `address` (an IPv4 or IPv6 address as text, brackets allowed) is a public unicast
 * address: what a server may connect to on a tenant's behalf without reaching the cluster, the
 * cloud's metadata service or anything else of the operator's network. Anything else, a name
 * included, is not.
 */
export function isPublicAddress(address: string): boolean {
  const a = parsed(address);
  if (a.family === 4) return !notPublicV4.check(a.address, 'ipv4');
  if (a.family === 6) return globalUnicast.check(a.address, 'ipv6') && !specialV6.check(a.address, 'ipv6');
  return false;
}

/** Whether `address` is a loopback address (127.0.0.0/8 or ::1): for development and tests only. */
export function isLoopbackAddress(address: string): boolean {
  const a = parsed(address);
  return a.family === 0 ? false : loopback.check(a.address, a.family === 4 ? 'ipv4' : 'ipv6');
}

/** A host's addresses, all of them (A and AAAA): the system resolver, or a test's. */
export type HostResolver = (hostname: string) => Promise<ReadonlyArray<{ address: string; family: number }>>;

export const systemResolver: HostResolver = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for net.connect (undici's `connect.lookup`) that resolves the name itself and answers
 * only when every address it has is `allowed`: the socket then opens to those very addresses, so a
 * name answering a public address to a check and a private one to the connect (DNS rebinding)
 * cannot get through. A name mixing public and private answers is refused whole; not found and
 * refused are one answer (`refusal()`), so which internal names exist is not told.
 */
export function checkedLookup(allowed: (address: string) => boolean, refusal: () => Error, resolve: HostResolver = systemResolver) {
  return (hostname: string, opts: LookupOptions, callback: LookupCallback): void => {
    resolve(hostname).then(
      (found) => {
        const family = opts.family === 4 || opts.family === 6 ? opts.family : 0;
        const addresses = found.filter((a) => family === 0 || a.family === family).map((a) => ({ address: a.address, family: a.family }));
        if (found.length === 0 || addresses.length === 0 || !found.every((a) => allowed(a.address))) {
          callback(refusal(), '');
          return;
        }
        if (opts.all === true) callback(null, addresses);
        else callback(null, addresses[0]!.address, addresses[0]!.family);
      },
      () => callback(refusal(), ''),
    );
  };
}
