import { GatewayError } from '../gateway.errors';
import type { ImageFetcher } from '../media/media-fetcher';
import { MediaRefused } from '../media/media-url';
import type { GatewayRequest } from '../openai/openai-request';
import type { ProviderKey } from '../providers/provider.types';

export interface MediaStepOptions {
  /** GATEWAY_MEDIA_FETCH_PROVIDERS: the providers that fetch image URLs themselves, from inside the operator's network. */
  fetchFor: readonly ProviderKey[];
  /** GATEWAY_MEDIA_MAX_FETCHES: https images a request may have fetched. */
  maxFetches: number;
  /** GATEWAY_MEDIA_MAX_CONCURRENT: requests holding fetched images at once, per replica (their memory is held until they end). */
  maxConcurrent: number;
  /** GATEWAY_MEDIA_FETCH_TIMEOUT_MS: the longest a request's images may take to fetch, all together. */
  timeoutMs: number;
}

/** Gives back a request's place among those holding fetched images (MediaStep.inline); once is enough. */
export type MediaRelease = () => void;

const NOTHING_HELD: MediaRelease = () => undefined;

/**
 * After admission, before the provider: a request's https image URLs, when one of the providers it
 * may go to would fetch them itself (the in-house model server, inside the operator's network), are
 * fetched here through the address check (MediaFetcher) and sent on as data: URLs, so the model
 * server never opens a connection a tenant chose (docs/decisions/2026-11-29-media-urls.md).
 */
export class MediaStep {
  private readonly fetchFor: ReadonlySet<ProviderKey>;
  private holding = 0;

  constructor(
    private readonly fetcher: ImageFetcher,
    private readonly options: MediaStepOptions,
  ) {
    this.fetchFor = new Set(options.fetchFor);
  }

  /** Whether the request has https images to fetch here before `providers` see it. */
  needed(request: GatewayRequest, providers: readonly ProviderKey[]): boolean {
    return request.remoteImages !== undefined && providers.some((p) => this.fetchFor.has(p));
  }

  /**
   * Replaces each https image URL of the request with the image itself, as a data: URL; throws a
   * 400 naming the image the gateway would not or could not fetch, or a 503 while this replica holds
   * as many requests' images as it may. The caller releases its place when the request has ended.
   */
  async inline(request: GatewayRequest): Promise<MediaRelease> {
    const images = request.remoteImages ?? [];
    if (images.length === 0) return NOTHING_HELD;
    if (images.length > this.options.maxFetches) {
      throw new GatewayError(
        400,
        'invalid_request',
        `A request may carry at most ${this.options.maxFetches} https image URLs (this one has ${images.length}); send the others as data: URLs.`,
        images[this.options.maxFetches]!.param,
      );
    }
    if (this.holding >= this.options.maxConcurrent) {
      throw new GatewayError(503, 'service_unavailable', 'The gateway is fetching as many images as it may at once; try again shortly, or send the images as data: URLs.', null, {
        'retry-after': '1',
      });
    }
    this.holding++;
    let held = true;
    const release: MediaRelease = () => {
      if (!held) return;
      held = false;
      this.holding--;
    };
    // The first refusal stops the other fetches: the request is refused whole, and its place is
    // given back only once every fetch has let go of its bytes.
    const stop = new AbortController();
    const signal = AbortSignal.any([stop.signal, AbortSignal.timeout(this.options.timeoutMs)]);
    const budget = { left: this.fetcher.maxBytes };
    let first: unknown;
    await Promise.all(
      images.map(async (image) => {
        try {
          image.target['url'] = await this.fetcher.fetchDataUrl(image.url, signal, budget);
        } catch (err) {
          if (first === undefined) first = err instanceof MediaRefused ? new GatewayError(400, 'invalid_request', `${image.param}: ${err.message}`, image.param) : err;
          stop.abort();
        }
      }),
    );
    if (first !== undefined) {
      release();
      throw first;
    }
    return release;
  }
}
