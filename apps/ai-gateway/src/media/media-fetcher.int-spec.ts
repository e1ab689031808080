import { FakeImageHost, TINY_PNG } from '@flagship/testing';
import { type HostResolver, MediaFetcher } from './media-fetcher';
import { MediaRefused } from './media-url';

/**
 * The fetcher against a real HTTPS server on loopback; names are resolved by the test's table, so
 * no traffic leaves the machine: a name mapped to a non-loopback address must never be connected to.
 */
describe('MediaFetcher', () => {
  let host: FakeImageHost;
  const resolved: string[] = [];
  const table: Record<string, Array<{ address: string; family: number }>> = {
    'images.test': [{ address: '127.0.0.1', family: 4 }],
    'metadata.test': [{ address: '169.254.169.254', family: 4 }],
    'internal.test': [{ address: '10.20.30.40', family: 4 }],
    'mixed.test': [
      { address: '127.0.0.1', family: 4 },
      { address: '10.0.0.1', family: 4 },
    ],
    'mapped.test': [{ address: '::ffff:169.254.169.254', family: 6 }],
  };
  const resolve: HostResolver = async (name) => {
    resolved.push(name);
    const found = table[name];
    if (found === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
    return found;
  };
  const fetchers: MediaFetcher[] = [];
  const fetcher = (allowLoopback = true, maxBytes = 64 * 1024, timeoutMs = 2000): MediaFetcher => {
    const f = new MediaFetcher({ policy: { maxBytes, allowLoopback }, timeoutMs, resolve, ca: host.ca });
    fetchers.push(f);
    return f;
  };
  /** The data: URL fetched, or the refusal's reason. */
  const outcome = async (f: MediaFetcher, url: string): Promise<string> => {
    try {
      return await f.fetchDataUrl(new URL(url), AbortSignal.timeout(5000));
    } catch (err) {
      if (err instanceof MediaRefused) return `refused: ${err.message}`;
      throw err;
    }
  };

  beforeAll(async () => {
    host = await FakeImageHost.start(['images.test', 'mixed.test', 'mapped.test', 'metadata.test', 'internal.test']);
  });
  afterAll(async () => {
    await Promise.all(fetchers.map((f) => f.close()));
    await host.close();
  });
  beforeEach(() => {
    resolved.length = 0;
    host.requests.length = 0;
    host.connections = 0;
  });

  it('fetches an image from a name resolving to allowed addresses, as a data: URL', async () => {
    expect(await outcome(fetcher(), host.url('images.test', '/cat.png'))).toBe(`data:image/png;base64,${TINY_PNG.toString('base64')}`);
    expect(resolved).toEqual(['images.test']);
    expect(host.requests).toEqual(['/cat.png']);
  });

  it.each([
    ['metadata.test', 'the metadata address'],
    ['internal.test', 'a private address'],
    ['mixed.test', 'one allowed record and one private one'],
    ['mapped.test', 'an IPv4-mapped IPv6 address'],
    ['nowhere.test', 'nothing (not found reads the same as private)'],
  ])('refuses %s (%s) without opening a connection', async (name) => {
    expect(await outcome(fetcher(), host.url(name, '/cat.png'))).toBe("refused: the image URL's host does not resolve to public addresses only.");
    expect(resolved).toEqual([name]);
    expect(host.connections).toBe(0);
  });

  it('refuses loopback unless the development setting allows it', async () => {
    expect(await outcome(fetcher(false), host.url('images.test', '/cat.png'))).toBe("refused: the image URL's host does not resolve to public addresses only.");
    expect(host.connections).toBe(0);
  });

  it('follows no redirect', async () => {
    expect(await outcome(fetcher(), host.url('images.test', '/redirect'))).toBe('refused: the image URL redirects (HTTP 302); the gateway follows no redirects, so send the final URL.');
    expect(host.requests).toEqual(['/redirect']);
  });

  it('takes images only', async () => {
    expect(await outcome(fetcher(), host.url('images.test', '/page'))).toBe('refused: the image URL did not answer an image (image/png, image/jpeg, image/gif, image/webp).');
    expect(await outcome(fetcher(), host.url('images.test', '/missing.png'))).toBe('refused: the image URL answered HTTP 404.');
  });

  it('bounds the bytes, announced or not; a request\'s images share one budget', async () => {
    const f = fetcher(true, 64 * 1024);
    expect(await outcome(f, host.url('images.test', '/big'))).toBe(`refused: the request's images come to more than ${64 * 1024} bytes.`);
    expect(await outcome(f, host.url('images.test', '/chunked-big'))).toBe(`refused: the request's images come to more than ${64 * 1024} bytes.`);
    const budget = { left: TINY_PNG.length + 10 };
    await expect(f.fetchDataUrl(new URL(host.url('images.test', '/cat.png')), AbortSignal.timeout(5000), budget)).resolves.toMatch(/^data:image\/png;base64,/);
    expect(budget.left).toBe(10);
    await expect(f.fetchDataUrl(new URL(host.url('images.test', '/cat.png')), AbortSignal.timeout(5000), budget)).rejects.toThrow(MediaRefused);
  });

  it('bounds the time', async () => {
    const f = fetcher(true, 64 * 1024, 300);
    expect(await outcome(f, host.url('images.test', '/slow'))).toBe('refused: the image URL did not answer in time.');
  });

  it('verifies the host\'s certificate', async () => {
    const untrusting = new MediaFetcher({ policy: { maxBytes: 1024, allowLoopback: true }, timeoutMs: 2000, resolve });
    fetchers.push(untrusting);
    expect(await outcome(untrusting, host.url('images.test', '/cat.png'))).toBe("refused: the image URL's TLS certificate could not be verified.");
  });
});
