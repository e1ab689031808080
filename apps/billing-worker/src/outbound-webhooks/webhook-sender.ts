import { isIP } from 'node:net';
import { Agent, type Dispatcher } from 'undici';
import { checkedLookup, type HostResolver, isPublicAddress, systemResolver } from '@flagship/service-kit';

export interface WebhookSenderOptions {
  /** WEBHOOKS_ALLOW_PRIVATE_URLS (development only): http and loopback or private addresses are allowed. */
  allowPrivate: boolean;
  /** The longest a whole attempt may take: connect, send and the answer's head and first bytes. */
  timeoutMs: number;
  resolve?: HostResolver;
  /** Certificate authorities trusted instead of Node's (tests: a test CA). */
  ca?: string;
}

export interface SendOutcome {
  outcome: 'delivered' | 'failed' | 'refused';
  responseCode: number | null;
  durationMs: number;
  error: string | null;
}

/** Of an answer's body, at most this much is read (and dropped): a receiver cannot hold the worker with an endless one. */
export const MAX_RESPONSE_BYTES = 4096;

class AddressRefused extends Error {
  constructor() {
    super('the URL does not resolve to public addresses only');
    this.name = 'AddressRefused';
  }
}

const refusalIn = (err: unknown): boolean => {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) if (e instanceof AddressRefused) return true;
  return false;
};

/**
 * POSTs one signed delivery to a tenant's URL without reaching the operator's network: the name is
 * resolved by the connection's own checked lookup (service-kit's checkedLookup: every address must
 * be public, and the socket opens to the checked one), an address literal is checked here, redirects
 * are never followed (a 3xx is a failure), and the attempt is bounded in time and in bytes read.
 */
export class WebhookSender {
  private readonly agent: Agent;
  private readonly allowed: (address: string) => boolean;

  constructor(private readonly options: WebhookSenderOptions) {
    this.allowed = options.allowPrivate ? () => true : isPublicAddress;
    this.agent = new Agent({
      connect: {
        timeout: options.timeoutMs,
        lookup: checkedLookup(this.allowed, () => new AddressRefused(), options.resolve ?? systemResolver),
        ...(options.ca === undefined ? {} : { ca: options.ca }),
      },
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      keepAliveTimeout: 10_000,
      connections: 16,
    });
  }

  async send(rawUrl: string, headers: Record<string, string>, body: string): Promise<SendOutcome> {
    const started = performance.now();
    const done = (outcome: SendOutcome['outcome'], responseCode: number | null, error: string | null): SendOutcome => ({
      outcome,
      responseCode,
      durationMs: Math.round(performance.now() - started),
      error: error === null ? null : error.slice(0, 500),
    });
    let url: URL;
    try {
      url = new URL(rawUrl);
    } catch {
      return done('refused', null, 'the URL is not valid');
    }
    if (url.protocol !== 'https:' && !(this.options.allowPrivate && url.protocol === 'http:')) return done('refused', null, 'only https URLs are called');
    // net.connect looks up names only: an address literal never reaches the checked lookup.
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    if (isIP(host) !== 0 && !this.allowed(host)) return done('refused', null, 'the URL names a loopback, private or reserved address');
    let res: Dispatcher.ResponseData;
    try {
      res = await this.agent.request({
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json', 'user-agent': 'flagship-webhooks/1' },
        body,
        signal: AbortSignal.timeout(this.options.timeoutMs),
      });
    } catch (err) {
      if (refusalIn(err)) return done('refused', null, new AddressRefused().message);
      return done('failed', null, err instanceof Error ? `${err.name}: ${err.message}` : String(err));
    }
    const code = res.statusCode;
    let read = 0;
    try {
      for await (const chunk of res.body) {
        read += (chunk as Buffer).length;
        if (read >= MAX_RESPONSE_BYTES) break;
      }
    } catch {
      // What the receiver answered is all that counts; a body cut short changes nothing.
    } finally {
      if (!res.body.readableEnded) res.body.on('error', () => undefined).destroy();
    }
    if (code >= 200 && code < 300) return done('delivered', code, null);
    if (code >= 300 && code < 400) return done('failed', code, `HTTP ${code}: redirects are not followed; give the final URL`);
    return done('failed', code, `HTTP ${code}`);
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}
