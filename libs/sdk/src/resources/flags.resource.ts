import type { HttpTransport } from '../http-transport';
import { FlagshipError } from '../sdk.errors';
import type {
  CreateFlagInput,
  EvaluateInput,
  EvaluationResult,
  Flag,
  FlagAuditEntry,
  FlagExport,
  FlagVariation,
  ImportFlagsResult,
  LaunchDarklySdkData,
  PageQuery,
  PaginateOptions,
  RequestOptions,
  UpdateFlagInput,
  VersionedFlag,
} from '../sdk.types';
import { paginate } from './paginate';

export interface FlagListQuery extends PageQuery {
  /** Only the flags of this project. */
  projectId?: string;
  /** stale: flags not evaluated in the environment, or serving one value to everyone, for `staleAfterDays` days; active: the others. */
  lifecycle?: 'stale' | 'active';
  /** Days for `lifecycle` (1..365); default the server's STALE_AFTER_DAYS (30). */
  staleAfterDays?: number;
}

export interface UpdateFlagOptions extends RequestOptions {
  /** The ETag from get() or a previous update(); the update is refused (ApiError 412) if the flag changed since. */
  ifMatch?: string;
}

const key = (flagKey: string): string => encodeURIComponent(flagKey);

/** `/api/flags`: flags as seen in the client's (or the call's) environment. */
export class FlagsResource {
  constructor(private readonly http: HttpTransport) {}

  /** One page (default 100); see listAll() for every flag. */
  async list(query: FlagListQuery = {}, options?: RequestOptions): Promise<Flag[]> {
    return (await this.http.request<Flag[]>({ method: 'GET', path: '/api/flags', query: { ...query }, options })).body;
  }

  listAll(query: Omit<FlagListQuery, 'cursor' | 'limit'> & PaginateOptions = {}, options?: RequestOptions): AsyncGenerator<Flag, void, undefined> {
    return paginate<Flag>(this.http, '/api/flags', { projectId: query.projectId, lifecycle: query.lifecycle, staleAfterDays: query.staleAfterDays, limit: query.pageSize }, options);
  }

  /** The flag and its ETag, for an update that must not overwrite someone else's. */
  async get(flagKey: string, options?: RequestOptions): Promise<VersionedFlag> {
    return versioned(await this.http.request<Flag>({ method: 'GET', path: `/api/flags/${key(flagKey)}`, flagKey, options }));
  }

  async create(input: CreateFlagInput, options?: RequestOptions): Promise<Flag> {
    return (await this.http.request<Flag>({ method: 'POST', path: '/api/flags', body: input, options })).body;
  }

  /** A flag inside a project, with its variations in `flag_variations`. */
  async createInProject(projectId: string, input: Omit<CreateFlagInput, 'projectId'>, options?: RequestOptions): Promise<Flag> {
    return (await this.http.request<Flag>({ method: 'POST', path: `/api/flags/projects/${encodeURIComponent(projectId)}/flags`, body: input, options })).body;
  }

  async update(flagKey: string, patch: UpdateFlagInput, options: UpdateFlagOptions = {}): Promise<VersionedFlag> {
    const { ifMatch, ...rest } = options;
    return versioned(await this.http.request<Flag>({ method: 'PATCH', path: `/api/flags/${key(flagKey)}`, body: patch, ifMatch, flagKey, options: rest }));
  }

  async delete(flagKey: string, options?: RequestOptions): Promise<void> {
    await this.http.request<void>({ method: 'DELETE', path: `/api/flags/${key(flagKey)}`, flagKey, options });
  }

  async variations(flagKey: string, options?: RequestOptions): Promise<FlagVariation[]> {
    return (await this.http.request<FlagVariation[]>({ method: 'GET', path: `/api/flags/${key(flagKey)}/variations`, flagKey, options })).body;
  }

  /** The flag's audit trail, oldest first: who changed what, with each update's fields as `{from, to}`. */
  async audit(flagKey: string, options?: RequestOptions): Promise<FlagAuditEntry[]> {
    return (await this.http.request<FlagAuditEntry[]>({ method: 'GET', path: `/api/flags/${key(flagKey)}/audit`, flagKey, options })).body;
  }

  async evaluate(flagKey: string, input: EvaluateInput, options?: RequestOptions): Promise<EvaluationResult> {
    return (await this.http.request<EvaluationResult>({ method: 'POST', path: `/api/flags/${key(flagKey)}/evaluate`, body: input, readOnly: true, flagKey, options })).body;
  }

  /** Evaluates a flag of one project; `context` holds the context key (`key`, `targetingKey` or `userId`) and attributes. */
  async evaluateInProject(projectId: string, flagKey: string, context: Record<string, unknown>, options?: RequestOptions): Promise<EvaluationResult> {
    return (
      await this.http.request<EvaluationResult>({
        method: 'POST',
        path: `/api/flags/projects/${encodeURIComponent(projectId)}/flags/${key(flagKey)}/evaluate`,
        body: context,
        readOnly: true,
        flagKey,
        options,
      })
    ).body;
  }

  /**
   * Imports LaunchDarkly's server-side SDK data into the client's (or the call's) environment: each
   * flag is created, or replaced by key, keeping salts and seeds so every context keeps its bucket.
   * What cannot be imported is an ApiError 422 naming the flag and the clause, and nothing is written.
   */
  async import(data: LaunchDarklySdkData, options?: RequestOptions): Promise<ImportFlagsResult> {
    return (await this.http.request<ImportFlagsResult>({ method: 'POST', path: '/api/flags/import', body: data, options })).body;
  }

  /** Every flag of an environment (default: the client's), in the file format orep-server serves. */
  async export(environment?: string, options?: RequestOptions): Promise<FlagExport> {
    return (await this.http.request<FlagExport>({ method: 'GET', path: '/api/flags/export', query: { environment }, options })).body;
  }
}

function versioned(res: { body: Flag; headers: Headers }): VersionedFlag {
  const etag = res.headers.get('etag');
  if (etag === null) throw new FlagshipError('The API answered a flag without an ETag.');
  return { flag: res.body, etag };
}
