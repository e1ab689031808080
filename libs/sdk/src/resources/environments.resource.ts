import type { HttpTransport } from '../http-transport';
import type { CreateEnvironmentInput, Environment, RequestOptions, UpdateEnvironmentInput } from '../sdk.types';

/** `/api/environments`: each tenant starts with production, staging and development. */
export class EnvironmentsResource {
  constructor(private readonly http: HttpTransport) {}

  async list(options?: RequestOptions): Promise<Environment[]> {
    return (await this.http.request<Environment[]>({ method: 'GET', path: '/api/environments', options })).body;
  }

  /** Tenant admins only. */
  async create(input: CreateEnvironmentInput, options?: RequestOptions): Promise<Environment> {
    return (await this.http.request<Environment>({ method: 'POST', path: '/api/environments', body: input, options })).body;
  }

  /** Tenant admins only. `requireApproval: true` makes direct changes to flags there ApiError 409 approval-required: use `changeRequests`. */
  async update(environmentKey: string, input: UpdateEnvironmentInput, options?: RequestOptions): Promise<Environment> {
    return (await this.http.request<Environment>({ method: 'PATCH', path: `/api/environments/${encodeURIComponent(environmentKey)}`, body: input, options })).body;
  }
}
