import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { HostResolver } from '@flagship/service-kit';
import { MAX_RESPONSE_BYTES, WebhookSender } from './webhook-sender';

/**
 * The sender against a real HTTP receiver on loopback. In production mode (allowPrivate false) the
 * receiver must never be reached: not by an address literal, nor by a name whose addresses (from
 * the test resolver) are loopback, private, link-local, CGNAT or IPv6-mapped.
 */
describe('WebhookSender', () => {
  let server: Server;
  let port: number;
  let hits: string[] = [];
  let answer: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.end('ok');

  beforeAll(async () => {
    server = createServer((req, res) => {
      hits.push(req.url ?? '');
      answer(req, res);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  beforeEach(() => {
    hits = [];
    answer = (_req, res) => res.end('ok');
  });

  // Every name the test uses, as a DNS server would answer it (all point at the receiver, one way or another).
  const names: Record<string, Array<{ address: string; family: number }>> = {
    'loopback.test': [{ address: '127.0.0.1', family: 4 }],
    'private.test': [{ address: '10.0.0.5', family: 4 }],
    'metadata.test': [{ address: '169.254.169.254', family: 4 }],
    'cgnat.test': [{ address: '100.64.1.1', family: 4 }],
    'mapped.test': [{ address: '::ffff:127.0.0.1', family: 6 }],
    'ula.test': [{ address: 'fd00::1', family: 6 }],
    'mixed.test': [{ address: '93.184.215.14', family: 4 }, { address: '127.0.0.1', family: 4 }],
    'receiver.test': [{ address: '127.0.0.1', family: 4 }],
  };
  const resolve: HostResolver = async (name) => {
    const found = names[name];
    if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
    return found;
  };

  it.each(['loopback.test', 'private.test', 'metadata.test', 'cgnat.test', 'mapped.test', 'ula.test', 'mixed.test'])(
    'refuses a name that resolves to a non-public address (%s) and never connects',
    async (name) => {
      const sender = new WebhookSender({ allowPrivate: false, timeoutMs: 2000, resolve });
      try {
        // http is refused before any lookup in production; https here so the lookup is what refuses.
        const out = await sender.send(`https://${name}:${port}/hook`, {}, '{}');
        expect(out).toMatchObject({ outcome: 'refused', responseCode: null, error: 'the URL does not resolve to public addresses only' });
        expect(hits).toEqual([]);
      } finally {
        await sender.close();
      }
    },
  );

  it.each(['127.0.0.1', '10.0.0.5', '169.254.169.254', '[::ffff:127.0.0.1]', '[::ffff:7f00:1]', '[::1]', '[fe80::1]', '0x7f.1'])('refuses an address literal %s', async (host) => {
    const sender = new WebhookSender({ allowPrivate: false, timeoutMs: 2000, resolve });
    try {
      expect(await sender.send(`https://${host}:${port}/hook`, {}, '{}')).toMatchObject({ outcome: 'refused', error: 'the URL names a loopback, private or reserved address' });
      expect(hits).toEqual([]);
    } finally {
      await sender.close();
    }
  });

  it('refuses http in production before anything else', async () => {
    const sender = new WebhookSender({ allowPrivate: false, timeoutMs: 2000, resolve });
    expect(await sender.send(`http://receiver.test:${port}/hook`, {}, '{}')).toMatchObject({ outcome: 'refused', error: 'only https URLs are called' });
    await sender.close();
  });

  describe('with the development setting (loopback allowed)', () => {
    let sender: WebhookSender;
    beforeEach(() => {
      sender = new WebhookSender({ allowPrivate: true, timeoutMs: 500, resolve });
    });
    afterEach(() => sender.close());

    it('posts the body with the given headers to the address the name resolved to', async () => {
      let seen: { headers: IncomingMessage['headers']; body: string } | undefined;
      answer = (req, res) => {
        let body = '';
        req.on('data', (c) => (body += c));
        req.on('end', () => {
          seen = { headers: req.headers, body };
          res.statusCode = 204;
          res.end();
        });
      };
      const out = await sender.send(`http://receiver.test:${port}/hook?x=1`, { 'webhook-id': 'msg_1' }, '{"a":1}');
      expect(out).toMatchObject({ outcome: 'delivered', responseCode: 204, error: null });
      expect(hits).toEqual(['/hook?x=1']);
      expect(seen).toMatchObject({ body: '{"a":1}', headers: { 'webhook-id': 'msg_1', 'content-type': 'application/json' } });
    });

    it('does not follow a redirect: a 3xx is a failed attempt and its target is never called', async () => {
      answer = (_req, res) => {
        res.statusCode = 302;
        res.setHeader('location', `http://127.0.0.1:${port}/elsewhere`);
        res.end();
      };
      const out = await sender.send(`http://127.0.0.1:${port}/hook`, {}, '{}');
      expect(out).toMatchObject({ outcome: 'failed', responseCode: 302 });
      expect(out.error).toContain('redirects are not followed');
      expect(hits).toEqual(['/hook']);
    });

    it('gives up on a receiver that does not answer within the timeout', async () => {
      answer = () => undefined;
      const out = await sender.send(`http://127.0.0.1:${port}/hook`, {}, '{}');
      expect(out.outcome).toBe('failed');
      expect(out.durationMs).toBeGreaterThanOrEqual(450);
      expect(out.durationMs).toBeLessThan(3000);
    });

    it('reads at most a few KiB of an endless answer', async () => {
      let written = 0;
      answer = (_req, res) => {
        res.statusCode = 200;
        const more = (): void => {
          while (written < 50 * 1024 * 1024 && res.write(Buffer.alloc(16 * 1024))) written += 16 * 1024;
          if (written < 50 * 1024 * 1024) res.once('drain', more);
        };
        more();
      };
      const out = await sender.send(`http://127.0.0.1:${port}/hook`, {}, '{}');
      expect(out).toMatchObject({ outcome: 'delivered', responseCode: 200 });
      expect(written).toBeLessThan(50 * 1024 * 1024);
      expect(MAX_RESPONSE_BYTES).toBe(4096);
    });

    it('logs a 500 as a failure with its code', async () => {
      answer = (_req, res) => {
        res.statusCode = 500;
        res.end('boom');
      };
      expect(await sender.send(`http://127.0.0.1:${port}/hook`, {}, '{}')).toMatchObject({ outcome: 'failed', responseCode: 500, error: 'HTTP 500' });
    });
  });
});
