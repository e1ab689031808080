import { isLoopbackAddress, isPublicAddress } from './public-address';

describe('isPublicAddress', () => {
  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '93.184.215.14',
    '100.63.255.255',
    '100.128.0.0',
    '172.15.255.255',
    '172.32.0.0',
    '192.169.0.1',
    '2606:4700:4700::1111',
    '2a00:1450:4001:80b::200e',
    '[2606:4700:4700::1111]',
  ])('%s is public', (address) => {
    expect(isPublicAddress(address)).toBe(true);
  });

  it.each([
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'this network'],
    ['10.0.0.5', 'private'],
    ['100.64.0.1', 'CGNAT'],
    ['100.127.255.254', 'CGNAT'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['169.254.169.254', 'cloud metadata (link-local)'],
    ['169.254.170.2', 'ECS task metadata (link-local)'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.0.0.170', 'IETF protocol assignments'],
    ['192.0.2.1', 'documentation'],
    ['192.88.99.1', '6to4 relay'],
    ['192.168.1.1', 'private'],
    ['198.18.0.1', 'benchmarking'],
    ['198.51.100.7', 'documentation'],
    ['203.0.113.9', 'documentation'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'broadcast'],
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['[::1]', 'loopback, bracketed'],
    ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
    ['::ffff:8.8.8.8', 'IPv4-mapped, even of a public address'],
    ['::ffff:a9fe:a9fe', 'IPv4-mapped metadata'],
    ['64:ff9b::a9fe:a9fe', 'NAT64 of the metadata address'],
    ['fc00::1', 'unique-local'],
    ['fd12:3456::1', 'unique-local'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local with a zone'],
    ['fd00:ec2::254', 'AWS IMDS over IPv6 (unique-local)'],
    ['ff02::1', 'multicast'],
    ['2001:db8::1', 'documentation'],
    ['2001:0:4136:e378::1', 'Teredo'],
    ['2002:a9fe:a9fe::1', '6to4 of the metadata address'],
    ['3fff::1', 'documentation'],
    ['localhost', 'a name'],
    ['', 'nothing'],
    ['1.2.3', 'not an address'],
  ])('%s is not public (%s)', (address) => {
    expect(isPublicAddress(address)).toBe(false);
  });
});

describe('isLoopbackAddress', () => {
  it('is 127.0.0.0/8 and ::1 only', () => {
    expect(['127.0.0.1', '127.1.2.3', '::1', '[::1]'].map(isLoopbackAddress)).toEqual([true, true, true, true]);
    expect(['10.0.0.1', '169.254.169.254', '::', 'fe80::1', 'localhost', '8.8.8.8'].map(isLoopbackAddress)).toEqual([false, false, false, false, false, false]);
  });
});
