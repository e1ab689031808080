import { type AuthOptions, credentialsFor } from './credentials';
import { HttpTransport, type RetryEvent } from './http-transport';
import { DEFAULT_RETRY_SETTINGS } from './retry-policy';
import { BillingResource } from './resources/billing.resource';
import { EnvironmentsResource } from './resources/environments.resource';
import { FlagsResource } from './resources/flags.resource';
import { SegmentsResource } from './resources/segments.resource';
import { GatewayBindingsResource } from './resources/gateway-bindings.resource';
import { ChangeRequestsResource, ScheduledChangesResource } from './resources/flag-changes.resource';
import { WebhooksResource } from './resources/webhooks.resource';
import { ProjectsResource } from './resources/projects.resource';
import { SubscriptionResource } from './resources/subscription.resource';
import { TenantsResource } from './resources/tenants.resource';
import { UsageResource } from './resources/usage.resource';
import { RolloutsResource } from './resources/rollouts.resource';

export const SDK_VERSION = '0.1.0';

export interface FlagshipClientOptions {
  /** The management API, e.g. `https://flags.example.com` (a path prefix is kept). */
  baseUrl: string;
  /** X-Tenant-ID of every call (a call's `tenantId` option overrides it). Client tokens are bound to their tenant anyway. */
  tenantId?: string;
  /** X-Environment of every call; the API's default is `production`. */
  environment?: string;
  /** A user's ID token, or an OAuth client's credentials. */
  auth: AuthOptions;
  /** Retries of a call answered 429 or 503, or that got no answer (default 3). */
  maxRetries?: number;
  /** Longest single wait between retries (default 30 000 ms); a server asking for more is not retried. */
  maxRetryDelayMs?: number;
  /** Per attempt, answer body included (default 30 000 ms). */
  timeoutMs?: number;
  /** Sent as User-Agent, before the SDK's own product token. */
  userAgent?: string;
  /** Called before each retry with its cause and wait, e.g. to log or count them. */
  onRetry?: (event: RetryEvent) => void;
}

function nonNegativeInteger(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < 0) throw new TypeError(`FlagshipClient: ${name} must be a non-negative integer.`);
  return value;
}

function positiveInteger(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < 1) throw new TypeError(`FlagshipClient: ${name} must be a positive integer.`);
  return value;
}

function runtime(): string {
  const version = (globalThis as { process?: { version?: string } }).process?.version;
  return version ? `node/${version}` : 'js';
}

/**
 * A typed client of the Flagship management API.
 *
 * ```ts
 * const flagship = new FlagshipClient({ baseUrl, tenantId, auth: { clientId, clientSecret } });
 * const { value } = await flagship.flags.evaluate('new-checkout', { userId: 'u-1' });
 * ```
 */
export class FlagshipClient {
  readonly flags: FlagsResource;
  /** Segments of an environment, used by flags through `segmentMatch`. */
  readonly segments: SegmentsResource;
  /** Approvals: changes to flags in an environment that requires them. */
  readonly changeRequests: ChangeRequestsResource;
  /** Flag changes written at a time. */
  readonly scheduledChanges: ScheduledChangesResource;
  readonly projects: ProjectsResource;
  readonly tenants: TenantsResource;
  readonly environments: EnvironmentsResource;
  readonly billing: BillingResource;
  readonly usage: UsageResource;
  /** Guarded rollouts of gateway model bindings: plan, state, decision log. */
  readonly rollouts: RolloutsResource;
  /** Plan checkout, customer portal, credit purchases (Stripe). */
  readonly subscription: SubscriptionResource;
  /** Outbound webhooks (Standard Webhooks): tenant admins only. */
  readonly webhooks: WebhooksResource;
  /** AI gateway routes bound to JSON flags: roll a model out by flag (tenant admins write). */
  readonly gatewayBindings: GatewayBindingsResource;

  constructor(options: FlagshipClientOptions) {
    const http = transportFor(options, 'FlagshipClient');
    this.flags = new FlagsResource(http);
    this.segments = new SegmentsResource(http);
    this.changeRequests = new ChangeRequestsResource(http);
    this.scheduledChanges = new ScheduledChangesResource(http);
    this.webhooks = new WebhooksResource(http);
    this.projects = new ProjectsResource(http);
    this.tenants = new TenantsResource(http);
    this.environments = new EnvironmentsResource(http);
    this.billing = new BillingResource(http);
    this.usage = new UsageResource(http);
    this.rollouts = new RolloutsResource(http);
    this.subscription = new SubscriptionResource(http);
    this.gatewayBindings = new GatewayBindingsResource(http);
  }
}

/** The transport a client (or the in-process provider) sends with, from the options a user gives; `who` names it in errors. */
export function transportFor(options: FlagshipClientOptions, who: string): HttpTransport {
  if (typeof options?.baseUrl !== 'string') throw new TypeError(`${who}: baseUrl is required.`);
  let base: URL;
  try {
    base = new URL(options.baseUrl);
  } catch {
    throw new TypeError(`${who}: baseUrl ${JSON.stringify(options.baseUrl)} is not a URL.`);
  }
  if (base.protocol !== 'http:' && base.protocol !== 'https:') throw new TypeError(`${who}: baseUrl must be an http(s) URL.`);
  if (base.username || base.password) throw new TypeError(`${who}: baseUrl must not carry credentials; use auth.`);
  if (base.search || base.hash) throw new TypeError(`${who}: baseUrl must not have a query or fragment.`);
  const baseUrl = `${base.origin}${base.pathname.replace(/\/+$/, '')}`;
  const ownAgent = `flagship-sdk-js/${SDK_VERSION} ${runtime()}`;
  return new HttpTransport(
    {
      baseUrl,
      userAgent: options.userAgent ? `${options.userAgent} ${ownAgent}` : ownAgent,
      maxRetries: nonNegativeInteger('maxRetries', options.maxRetries, 3),
      retry: { ...DEFAULT_RETRY_SETTINGS, maxDelayMs: nonNegativeInteger('maxRetryDelayMs', options.maxRetryDelayMs, DEFAULT_RETRY_SETTINGS.maxDelayMs) },
      timeoutMs: positiveInteger('timeoutMs', options.timeoutMs, 30_000),
      tenantId: options.tenantId,
      environment: options.environment,
      onRetry: options.onRetry,
    },
    credentialsFor(options.auth, baseUrl),
  );
}
