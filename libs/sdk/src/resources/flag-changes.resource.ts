import type { HttpTransport } from '../http-transport';
import type { ChangeRequest, CreateChangeRequestInput, CreateScheduledChangeInput, RequestOptions, ScheduledChange } from '../sdk.types';

const flagPath = (flagKey: string): string => `/api/flags/${encodeURIComponent(flagKey)}`;

/**
 * `/api/flags/{flagKey}/change-requests`: approvals, in the client's (or the call's) environment.
 * Where the environment requires approval, a flag change is made here, approved by another member
 * (editor or above; never its author: ApiError 403 approval-not-allowed), then applied.
 */
export class ChangeRequestsResource {
  constructor(private readonly http: HttpTransport) {}

  /** Newest first, at most 100. */
  async list(flagKey: string, options?: RequestOptions): Promise<ChangeRequest[]> {
    return (await this.http.request<ChangeRequest[]>({ method: 'GET', path: `${flagPath(flagKey)}/change-requests`, options })).body;
  }

  /** The request with its comments. */
  async get(flagKey: string, id: string, options?: RequestOptions): Promise<ChangeRequest> {
    return (await this.http.request<ChangeRequest>({ method: 'GET', path: this.path(flagKey, id), options })).body;
  }

  async create(flagKey: string, input: CreateChangeRequestInput, options?: RequestOptions): Promise<ChangeRequest> {
    return (await this.http.request<ChangeRequest>({ method: 'POST', path: `${flagPath(flagKey)}/change-requests`, body: input, options })).body;
  }

  async comment(flagKey: string, id: string, comment: string, options?: RequestOptions): Promise<ChangeRequest> {
    return this.step(flagKey, id, 'comments', { comment }, options);
  }

  /** Refused to its author, to viewers and to OAuth clients; ApiError 409 change-request-stale once the flag moved on. */
  async approve(flagKey: string, id: string, input: { comment?: string } = {}, options?: RequestOptions): Promise<ChangeRequest> {
    return this.step(flagKey, id, 'approve', input, options);
  }

  async reject(flagKey: string, id: string, input: { comment?: string } = {}, options?: RequestOptions): Promise<ChangeRequest> {
    return this.step(flagKey, id, 'reject', input, options);
  }

  /** Writes an approved request as its author (or schedules it, with executeAt), only at the flag's version it was made against. */
  async apply(flagKey: string, id: string, options?: RequestOptions): Promise<ChangeRequest> {
    return this.step(flagKey, id, 'apply', undefined, options);
  }

  private path(flagKey: string, id: string): string {
    return `${flagPath(flagKey)}/change-requests/${encodeURIComponent(id)}`;
  }

  private async step(flagKey: string, id: string, step: string, body: object | undefined, options?: RequestOptions): Promise<ChangeRequest> {
    return (await this.http.request<ChangeRequest>({ method: 'POST', path: `${this.path(flagKey, id)}/${step}`, body, options })).body;
  }
}

/** `/api/flags/{flagKey}/scheduled-changes`: flag changes written at a time, once, as the member who scheduled them. */
export class ScheduledChangesResource {
  constructor(private readonly http: HttpTransport) {}

  /** Latest first, at most 100, with what became of each (applied, failed with its reason, cancelled). */
  async list(flagKey: string, options?: RequestOptions): Promise<ScheduledChange[]> {
    return (await this.http.request<ScheduledChange[]>({ method: 'GET', path: `${flagPath(flagKey)}/scheduled-changes`, options })).body;
  }

  /** ApiError 409 approval-required where the environment requires approval: create a change request with executeAt instead. */
  async create(flagKey: string, input: CreateScheduledChangeInput, options?: RequestOptions): Promise<ScheduledChange> {
    return (await this.http.request<ScheduledChange>({ method: 'POST', path: `${flagPath(flagKey)}/scheduled-changes`, body: input, options })).body;
  }

  /** Cancels a change that has not run (ApiError 409 once it has). */
  async cancel(flagKey: string, id: string, options?: RequestOptions): Promise<void> {
    await this.http.request<void>({ method: 'DELETE', path: `${flagPath(flagKey)}/scheduled-changes/${encodeURIComponent(id)}`, options });
  }
}
