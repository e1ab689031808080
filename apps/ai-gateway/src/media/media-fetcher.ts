import { Agent, type Dispatcher } from 'undici';
import { checkedLookup, type HostResolver, systemResolver } from '@flagship/service-kit';
import { addressAllowed, IMAGE_MEDIA_TYPES, MediaRefused, type MediaPolicy } from './media-url';

export type { HostResolver } from '@flagship/service-kit';

export interface MediaFetcherOptions {
  policy: MediaPolicy;
  /** Longest a connection may take to open, and the longest silence of an answer. */
  timeoutMs: number;
  resolve?: HostResolver;
  /** Certificate authorities trusted instead of Node's (tests: a test CA). */
  ca?: string;
}

/** What the pipeline needs of a fetcher (MediaStep); MediaFetcher is the real one. */
export interface ImageFetcher {
  /** The most bytes a request's fetched images may have, together. */
  readonly maxBytes: number;
  /** The image at `url` as a data: URL, taking its bytes from `budget`; throws MediaRefused. */
  fetchDataUrl(url: URL, signal: AbortSignal, budget: { left: number }): Promise<string>;
}

const NOT_PUBLIC = "the image URL's host does not resolve to public addresses only.";

/** The MediaRefused in an undici error's causes, if any (a refusal thrown by the lookup). */
function refusalIn(err: unknown): MediaRefused | undefined {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) if (e instanceof MediaRefused) return e;
  return undefined;
}

const codeOf = (err: unknown): string => {
  const e = err as { code?: unknown; cause?: { code?: unknown } } | null;
  const code = e?.code ?? e?.cause?.code;
  return typeof code === 'string' ? code : '';
};

/**
 * Fetches the images of requests bound for providers that would fetch them themselves from inside
 * the operator's network. Every connection goes to an address this fetcher resolved and checked:
 * the name's A and AAAA records must all be public (addressAllowed), and the socket is opened to
 * those very addresses (the lookup is the connection's own), so a name that answers a public address
 * to the check and a private one to the connect (DNS rebinding) cannot get through. No redirect is
 * followed, the body is bounded in bytes and time, and only image types are accepted.
 */
export class MediaFetcher implements ImageFetcher {
  private readonly agent: Agent;

  constructor(private readonly options: MediaFetcherOptions) {
    this.agent = new Agent({
      connect: {
        timeout: options.timeoutMs,
        lookup: checkedLookup((address) => addressAllowed(address, options.policy), () => new MediaRefused(NOT_PUBLIC), options.resolve ?? systemResolver),
        ...(options.ca === undefined ? {} : { ca: options.ca }),
      },
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      keepAliveTimeout: 10_000,
      connections: 64,
    });
  }

  /** The most bytes a request's fetched images may have, together. */
  get maxBytes(): number {
    return this.options.policy.maxBytes;
  }

  /**
   * The image at `url` (checked by checkMediaUrl) as a data: URL; throws MediaRefused for anything
   * else. `budget` is what the request's images may still take, shared by its fetches.
   */
  async fetchDataUrl(url: URL, signal: AbortSignal, budget = { left: this.maxBytes }): Promise<string> {
    let res: Dispatcher.ResponseData;
    try {
      res = await this.agent.request({
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: 'GET',
        headers: { accept: [...IMAGE_MEDIA_TYPES].join(', '), 'user-agent': 'flagship-ai-gateway (image fetch)' },
        signal,
      });
    } catch (err) {
      throw this.failure(err, signal);
    }
    try {
      return await this.read(res, signal, budget);
    } finally {
      // Whatever was not read is dropped with its connection (destroying it reports an abort, expected here).
      if (!res.body.readableEnded) res.body.on('error', () => undefined).destroy();
    }
  }

  private async read(res: Dispatcher.ResponseData, signal: AbortSignal, budget: { left: number }): Promise<string> {
    const tooLarge = (): MediaRefused => new MediaRefused(`the request's images come to more than ${this.maxBytes} bytes.`);
    if (res.statusCode >= 300 && res.statusCode < 400) {
      throw new MediaRefused(`the image URL redirects (HTTP ${res.statusCode}); the gateway follows no redirects, so send the final URL.`);
    }
    if (res.statusCode !== 200) throw new MediaRefused(`the image URL answered HTTP ${res.statusCode}.`);
    const header = res.headers['content-type'];
    const type = (Array.isArray(header) ? header[0] : header)?.split(';')[0]?.trim().toLowerCase() ?? '';
    if (!IMAGE_MEDIA_TYPES.has(type)) throw new MediaRefused(`the image URL did not answer an image (${[...IMAGE_MEDIA_TYPES].join(', ')}).`);
    const length = Number(res.headers['content-length']);
    if (Number.isFinite(length) && length > budget.left) throw tooLarge();
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of res.body) {
        const bytes = chunk as Buffer;
        size += bytes.length;
        budget.left -= bytes.length;
        if (budget.left < 0) throw tooLarge();
        chunks.push(bytes);
      }
    } catch (err) {
      if (err instanceof MediaRefused) throw err;
      throw this.failure(err, signal);
    }
    return `data:${type};base64,${Buffer.concat(chunks, size).toString('base64')}`;
  }

  /** Any failure to fetch as a MediaRefused the client can act on (no internal detail in it). */
  private failure(err: unknown, signal: AbortSignal): MediaRefused {
    const refused = refusalIn(err);
    if (refused !== undefined) return refused;
    const code = codeOf(err);
    if (signal.aborted || code.endsWith('TIMEOUT')) return new MediaRefused('the image URL did not answer in time.');
    if (/CERT|SIGNATURE|ISSUER|ERR_TLS|ERR_SSL|EPROTO/.test(code)) return new MediaRefused("the image URL's TLS certificate could not be verified.");
    return new MediaRefused('the image URL could not be fetched.');
  }

  async close(): Promise<void> {
    await this.agent.close();
  }
}
