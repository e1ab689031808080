import { GatewayError } from '../gateway.errors';
import type { ImageFetcher } from '../media/media-fetcher';
import { MediaRefused } from '../media/media-url';
import type { GatewayRequest, RemoteImage } from '../openai/openai-request';
import { MediaStep, type MediaStepOptions } from './media.step';

/** A fetcher answering from a table: a data: URL, a refusal, or a wait until the signal aborts. */
class FakeImageFetcher implements ImageFetcher {
  readonly maxBytes = 100;
  readonly asked: string[] = [];
  readonly aborted: string[] = [];
  constructor(private readonly answers: Record<string, string | MediaRefused | 'hang'>) {}

  fetchDataUrl(url: URL, signal: AbortSignal): Promise<string> {
    this.asked.push(url.href);
    const answer = this.answers[url.href];
    if (answer === 'hang') {
      return new Promise((_resolve, reject) =>
        signal.addEventListener('abort', () => {
          this.aborted.push(url.href);
          reject(new MediaRefused('the image URL did not answer in time.'));
        }),
      );
    }
    if (answer instanceof MediaRefused) return Promise.reject(answer);
    return Promise.resolve(answer ?? 'data:image/png;base64,AA');
  }
}

const options: MediaStepOptions = { fetchFor: ['inhouse'], maxFetches: 2, maxConcurrent: 1, timeoutMs: 60_000 };

function requestWith(...urls: string[]): GatewayRequest {
  const remoteImages: RemoteImage[] = urls.map((u, i) => ({ target: { url: u }, url: new URL(u), param: `messages[0].content[${i}].image_url.url` }));
  return { remoteImages } as GatewayRequest;
}

const refusal = async (p: Promise<unknown>): Promise<unknown> =>
  p.then(
    () => 'resolved',
    (err: unknown) => (err instanceof GatewayError ? { status: err.status, code: err.code, param: err.param, message: err.message, headers: err.headers } : err),
  );

describe('MediaStep', () => {
  it('is needed only for a request with https images that may go to a provider that fetches', () => {
    const step = new MediaStep(new FakeImageFetcher({}), options);
    expect(step.needed(requestWith('https://a.example/x.png'), ['inhouse'])).toBe(true);
    expect(step.needed(requestWith('https://a.example/x.png'), ['inhouse', 'hosted'])).toBe(true);
    expect(step.needed(requestWith('https://a.example/x.png'), ['hosted'])).toBe(false);
    expect(step.needed({} as GatewayRequest, ['inhouse'])).toBe(false);
    expect(new MediaStep(new FakeImageFetcher({}), { ...options, fetchFor: ['inhouse', 'hosted'] }).needed(requestWith('https://a.example/x.png'), ['hosted'])).toBe(true);
  });

  it('replaces every https URL with the fetched image, in the body itself', async () => {
    const fetcher = new FakeImageFetcher({ 'https://a.example/1.png': 'data:image/png;base64,MQ==', 'https://b.example/2.gif': 'data:image/gif;base64,Mg==' });
    const request = requestWith('https://a.example/1.png', 'https://b.example/2.gif');
    const release = await new MediaStep(fetcher, options).inline(request);
    expect(request.remoteImages!.map((i) => i.target['url'])).toEqual(['data:image/png;base64,MQ==', 'data:image/gif;base64,Mg==']);
    release();
  });

  it('refuses the request with a 400 naming the image the fetcher refused, and stops the other fetches', async () => {
    const fetcher = new FakeImageFetcher({ 'https://slow.example/1.png': 'hang', 'https://bad.example/2.png': new MediaRefused("the image URL's host does not resolve to public addresses only.") });
    const step = new MediaStep(fetcher, options);
    expect(await refusal(step.inline(requestWith('https://slow.example/1.png', 'https://bad.example/2.png')))).toMatchObject({
      status: 400,
      code: 'invalid_request',
      param: 'messages[0].content[1].image_url.url',
      message: "messages[0].content[1].image_url.url: the image URL's host does not resolve to public addresses only.",
    });
    expect(fetcher.aborted).toEqual(['https://slow.example/1.png']);
    // Its place was given back: the next request is served.
    expect(await refusal(step.inline(requestWith('https://a.example/x.png')))).toBe('resolved');
  });

  it('refuses more https images than maxFetches, naming the first one over, before fetching any', async () => {
    const fetcher = new FakeImageFetcher({});
    const result = await refusal(new MediaStep(fetcher, options).inline(requestWith('https://a.example/1', 'https://a.example/2', 'https://a.example/3')));
    expect(result).toMatchObject({ status: 400, param: 'messages[0].content[2].image_url.url' });
    expect(fetcher.asked).toEqual([]);
  });

  it('holds at most maxConcurrent requests\' images: past it 503 with Retry-After, until one is released', async () => {
    const step = new MediaStep(new FakeImageFetcher({}), options);
    const release = await step.inline(requestWith('https://a.example/1.png'));
    expect(await refusal(step.inline(requestWith('https://a.example/2.png')))).toMatchObject({ status: 503, code: 'service_unavailable', headers: { 'retry-after': '1' } });
    release();
    release(); // a second release gives back nothing more
    const again = await step.inline(requestWith('https://a.example/3.png'));
    expect(await refusal(step.inline(requestWith('https://a.example/4.png')))).toMatchObject({ status: 503 });
    again();
  });
});
