import type { HttpTransport } from '../http-transport';
import type { CreateEnvironmentInput, Environment, RequestOptions } from '../sdk.types';

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
}
