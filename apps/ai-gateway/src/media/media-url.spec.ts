import { addressAllowed, checkMediaUrl, MAX_URL_LENGTH, MediaRefused, type MediaPolicy } from './media-url';

const policy: MediaPolicy = { maxBytes: 1000, allowLoopback: false };
const dev: MediaPolicy = { ...policy, allowLoopback: true };

/** The refusal's reason, or 'ok: <kind>' when the URL is accepted. */
const verdict = (url: unknown, p = policy): string => {
  try {
    return `ok: ${checkMediaUrl(url, p).kind}`;
  } catch (err) {
    if (err instanceof MediaRefused) return err.message;
    throw err;
  }
};

describe('checkMediaUrl', () => {
  describe('https URLs', () => {
    it.each([
      'https://images.example.com/cat.png',
      'https://images.example.com:443/cat.png?size=large#x',
      'https://8.8.8.8/cat.png',
      'https://[2606:4700:4700::1111]/cat.png',
      'HTTPS://Images.Example.COM/cat.png',
    ])('accepts %s (its name is resolved and checked when fetched)', (url) => {
      expect(verdict(url)).toBe('ok: remote');
    });

    it('gives the parsed URL to fetch', () => {
      expect(checkMediaUrl('https://images.example.com/a%20b.png?x=1', policy)).toEqual({ kind: 'remote', url: new URL('https://images.example.com/a%20b.png?x=1') });
    });

    it.each([
      ['http://images.example.com/cat.png', 'only https: and data: image URLs are accepted.'],
      ['ftp://images.example.com/cat.png', 'only https: and data: image URLs are accepted.'],
      ['file:///etc/passwd', 'only https: and data: image URLs are accepted.'],
      ['gopher://127.0.0.1:6379/_INFO', 'only https: and data: image URLs are accepted.'],
      ['https://user:pass@images.example.com/cat.png', 'the image URL must not carry credentials (user:password@).'],
      ['https://user@images.example.com/cat.png', 'the image URL must not carry credentials (user:password@).'],
      ['https://images.example.com:8443/cat.png', 'the image URL must use the default https port (443).'],
      ['https://169.254.169.254/latest/meta-data/', 'the image URL names a private or reserved address.'],
      ['https://169.254.169.254./latest/meta-data/', 'the image URL names a private or reserved address.'],
      ['https://127.0.0.1/x.png', 'the image URL names a private or reserved address.'],
      ['https://0x7f.1/x.png', 'the image URL names a private or reserved address.'],
      ['https://2130706433/x.png', 'the image URL names a private or reserved address.'],
      ['https://0177.0.0.1/x.png', 'the image URL names a private or reserved address.'],
      ['https://10.0.0.8/x.png', 'the image URL names a private or reserved address.'],
      ['https://100.64.1.1/x.png', 'the image URL names a private or reserved address.'],
      ['https://192.168.1.1/x.png', 'the image URL names a private or reserved address.'],
      ['https://0.0.0.0/x.png', 'the image URL names a private or reserved address.'],
      ['https://[::1]/x.png', 'the image URL names a private or reserved address.'],
      ['https://[::ffff:169.254.169.254]/x.png', 'the image URL names a private or reserved address.'],
      ['https://[fd00:ec2::254]/x.png', 'the image URL names a private or reserved address.'],
      ['https://[fe80::1]/x.png', 'the image URL names a private or reserved address.'],
      ['not a url', 'the image URL is not a valid URL.'],
      ['https://', 'the image URL is not a valid URL.'],
      ['', 'the image URL must be a non-empty string.'],
      [42, 'the image URL must be a non-empty string.'],
      [undefined, 'the image URL must be a non-empty string.'],
      [`https://images.example.com/${'a'.repeat(MAX_URL_LENGTH)}`, `the image URL is longer than ${MAX_URL_LENGTH} characters.`],
    ])('refuses %s', (url, reason) => {
      expect(verdict(url)).toBe(reason);
    });

    it('with loopback allowed (development and tests): loopback addresses and any port, never the private ranges', () => {
      expect(verdict('https://127.0.0.1:8443/x.png', dev)).toBe('ok: remote');
      expect(verdict('https://[::1]:8443/x.png', dev)).toBe('ok: remote');
      expect(verdict('https://images.test:8443/x.png', dev)).toBe('ok: remote');
      expect(verdict('https://169.254.169.254/x.png', dev)).toBe('the image URL names a private or reserved address.');
      expect(verdict('https://10.0.0.8:8443/x.png', dev)).toBe('the image URL names a private or reserved address.');
      expect(verdict('http://127.0.0.1:8443/x.png', dev)).toBe('only https: and data: image URLs are accepted.');
    });
  });

  describe('data: URLs', () => {
    const png = (data: string, header = 'data:image/png;base64,') => `${header}${data}`;

    it.each([
      png('iVBORw0KGgo='),
      png('AA'),
      png('/9j/4AAQ', 'data:image/jpeg;base64,'),
      png('R0lGODlh', 'DATA:IMAGE/GIF;BASE64,'),
      png('UklGRg==', 'data:image/webp;base64,'),
    ])('accepts %s', (url) => {
      expect(verdict(url)).toBe('ok: data');
    });

    it('bounds the decoded bytes: maxBytes is allowed, one more is refused', () => {
      // 1000 bytes are 1336 base64 characters with 2 padding characters; 1001 are 1336 with 1.
      expect(verdict(png(Buffer.alloc(1000).toString('base64')))).toBe('ok: data');
      expect(verdict(png(Buffer.alloc(1001).toString('base64')))).toBe('the image is larger than 1000 bytes.');
      expect(verdict(png('A'.repeat(4000)))).toBe('the image is larger than 1000 bytes.');
    });

    it.each([
      ['data:text/html;base64,PGgxPg==', 'a data: URL must hold an image of type image/png, image/jpeg, image/gif, image/webp.'],
      ['data:image/svg+xml;base64,PHN2Zz4=', 'a data: URL must hold an image of type image/png, image/jpeg, image/gif, image/webp.'],
      ['data:;base64,AAAA', 'a data: URL must hold an image of type image/png, image/jpeg, image/gif, image/webp.'],
      ['data:image/png,rawbytes', 'a data: URL must be base64-encoded (data:image/png;base64,...).'],
      ['data:image/png;charset=utf-8;base64,AAAA', 'a data: URL must be base64-encoded (data:image/png;base64,...).'],
      ['data:image/png;base64', 'a data: URL needs its data after a comma (data:image/png;base64,...).'],
      ['data:image/png;base64,not base64!', "a data: URL's data must be base64."],
      ['data:image/png;base64,AA==AA', "a data: URL's data must be base64."],
    ])('refuses %s', (url, reason) => {
      expect(verdict(url)).toBe(reason);
    });
  });
});

describe('addressAllowed', () => {
  it('public addresses always; loopback only when allowed; never private, link-local or the rest', () => {
    expect([addressAllowed('93.184.215.14', policy), addressAllowed('2606:4700:4700::1111', policy)]).toEqual([true, true]);
    expect([addressAllowed('127.0.0.1', policy), addressAllowed('::1', policy)]).toEqual([false, false]);
    expect([addressAllowed('127.0.0.1', dev), addressAllowed('::1', dev)]).toEqual([true, true]);
    for (const p of [policy, dev]) {
      expect(['10.1.2.3', '172.20.0.1', '192.168.0.1', '169.254.169.254', '100.64.0.1', 'fd00::1', 'fe80::1', '::ffff:10.0.0.1', '0.0.0.0', '::'].filter((a) => addressAllowed(a, p))).toEqual([]);
    }
  });
});
