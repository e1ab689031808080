import type { HttpTransport } from '../http-transport';
import type { CreateWebhookInput, PageQuery, PaginateOptions, RequestOptions, Webhook, WebhookDelivery, WebhookWithSecret } from '../sdk.types';
import { paginate } from './paginate';

const path = (webhookId: string): string => `/api/webhooks/${encodeURIComponent(webhookId)}`;

/** `/api/webhooks`: the tenant's outbound webhooks (tenant admins), their delivery log and replay. */
export class WebhooksResource {
  constructor(private readonly http: HttpTransport) {}

  /** One page (default 100), oldest first, without secrets; see listAll() for every webhook. */
  async list(query: PageQuery = {}, options?: RequestOptions): Promise<Webhook[]> {
    return (await this.http.request<Webhook[]>({ method: 'GET', path: '/api/webhooks', query: { ...query }, options })).body;
  }

  listAll(query: PaginateOptions = {}, options?: RequestOptions): AsyncGenerator<Webhook, void, undefined> {
    return paginate<Webhook>(this.http, '/api/webhooks', { limit: query.pageSize }, options);
  }

  /** The answer's `secret` is shown this once: keep it where the receiver verifies deliveries. */
  async create(input: CreateWebhookInput, options?: RequestOptions): Promise<WebhookWithSecret> {
    return (await this.http.request<WebhookWithSecret>({ method: 'POST', path: '/api/webhooks', body: input, options })).body;
  }

  async delete(webhookId: string, options?: RequestOptions): Promise<void> {
    await this.http.request<void>({ method: 'DELETE', path: path(webhookId), options });
  }

  /** One page of the delivery log, newest first, each delivery with its attempts. */
  async deliveries(webhookId: string, query: PageQuery = {}, options?: RequestOptions): Promise<WebhookDelivery[]> {
    return (await this.http.request<WebhookDelivery[]>({ method: 'GET', path: `${path(webhookId)}/deliveries`, query: { ...query }, options })).body;
  }

  /** Sends a logged delivery again (same webhook-id); ApiError 409 webhook-disabled for a disabled webhook. */
  async replay(webhookId: string, deliveryId: string, options?: RequestOptions): Promise<void> {
    await this.http.request<void>({ method: 'POST', path: `${path(webhookId)}/deliveries/${encodeURIComponent(deliveryId)}/replay`, options });
  }
}
