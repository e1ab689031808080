import type { ApiResponse, HttpTransport } from '../http-transport';
import { nextPageUrl } from '../link-header';
import { FlagshipError } from '../sdk.errors';
import type { RequestOptions } from '../sdk.types';

/**
 * Every item of a paginated list: fetches a page, yields its items, follows `Link: rel="next"` until
 * there is none. Pages are fetched only as the caller iterates, so breaking out early stops there.
 */
export async function* paginate<T>(
  transport: HttpTransport,
  path: string,
  query: Record<string, string | number | undefined>,
  options: RequestOptions | undefined,
): AsyncGenerator<T, void, undefined> {
  let next: { path: string; query: Record<string, string | number | undefined> } | undefined = { path, query };
  while (next) {
    const page: ApiResponse<T[]> = await transport.request<T[]>({ method: 'GET', path: next.path, query: next.query, options });
    yield* page.body;
    const url = nextPageUrl(page.headers.get('link'), page.url);
    // A next link naming the page just read would loop forever.
    if (url !== undefined && url === page.url) throw new FlagshipError(`The API's next page link repeats ${new URL(url).pathname}.`);
    // The link carries limit and cursor itself; the transport refuses one that leaves the API's origin.
    next = url === undefined ? undefined : { path: url, query: {} };
  }
}
