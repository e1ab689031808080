import type { HttpTransport } from '../http-transport';
import { FlagshipError } from '../sdk.errors';
import type { CreateSegmentInput, PageQuery, PaginateOptions, RequestOptions, Segment, SegmentAuditEntry, UpdateSegmentInput, VersionedSegment } from '../sdk.types';
import { paginate } from './paginate';

export interface UpdateSegmentOptions extends RequestOptions {
  /** The ETag from get() or a previous update(); the update is refused (ApiError 412) if the segment changed since. */
  ifMatch?: string;
}

const path = (segmentKey: string): string => `/api/segments/${encodeURIComponent(segmentKey)}`;

/** `/api/segments`: the segments of the client's (or the call's) environment. */
export class SegmentsResource {
  constructor(private readonly http: HttpTransport) {}

  /** One page (default 100), oldest first; see listAll() for every segment. */
  async list(query: PageQuery = {}, options?: RequestOptions): Promise<Segment[]> {
    return (await this.http.request<Segment[]>({ method: 'GET', path: '/api/segments', query: { ...query }, options })).body;
  }

  listAll(query: PaginateOptions = {}, options?: RequestOptions): AsyncGenerator<Segment, void, undefined> {
    return paginate<Segment>(this.http, '/api/segments', { limit: query.pageSize }, options);
  }

  /** The segment and its ETag, for an update that must not overwrite someone else's. */
  async get(segmentKey: string, options?: RequestOptions): Promise<VersionedSegment> {
    return versioned(await this.http.request<Segment>({ method: 'GET', path: path(segmentKey), options }));
  }

  async create(input: CreateSegmentInput, options?: RequestOptions): Promise<VersionedSegment> {
    return versioned(await this.http.request<Segment>({ method: 'POST', path: '/api/segments', body: input, options }));
  }

  async update(segmentKey: string, patch: UpdateSegmentInput, options: UpdateSegmentOptions = {}): Promise<VersionedSegment> {
    const { ifMatch, ...rest } = options;
    return versioned(await this.http.request<Segment>({ method: 'PATCH', path: path(segmentKey), body: patch, ifMatch, options: rest }));
  }

  /** Refused (ApiError 409 segment-in-use, naming them) while flags or segments use it. */
  async delete(segmentKey: string, options?: RequestOptions): Promise<void> {
    await this.http.request<void>({ method: 'DELETE', path: path(segmentKey), options });
  }

  async audit(segmentKey: string, options?: RequestOptions): Promise<SegmentAuditEntry[]> {
    return (await this.http.request<SegmentAuditEntry[]>({ method: 'GET', path: `${path(segmentKey)}/audit`, options })).body;
  }
}

function versioned(res: { body: Segment; headers: Headers }): VersionedSegment {
  const etag = res.headers.get('etag');
  if (etag === null) throw new FlagshipError('The API answered a segment without an ETag.');
  return { segment: res.body, etag };
}
