// The entry point of the published `@flagship/sdk` package: the management-API client, without the
// OpenFeature provider, so installing the client never needs `@openfeature/server-sdk`.
export { FlagshipClient, SDK_VERSION, type FlagshipClientOptions } from './flagship.client';
export type { RetryEvent } from './http-transport';
export type { AuthOptions, ClientCredentialsAuth, IdTokenAuth } from './credentials';
export { ApiError, AuthenticationError, ConnectionError, FlagNotFoundError, FlagshipError, RateLimitError } from './sdk.errors';
export type { FlagListQuery, UpdateFlagOptions } from './resources/flags.resource';
export type { FlagsResource } from './resources/flags.resource';
export type { SegmentsResource, UpdateSegmentOptions } from './resources/segments.resource';
export type { ChangeRequestsResource, ScheduledChangesResource } from './resources/flag-changes.resource';
export type { WebhooksResource } from './resources/webhooks.resource';
export type {
  GatewayBinding,
  GatewayBindingAuditEntry,
  GatewayBindingsResource,
  GatewayBindingWriteOptions,
  PutGatewayBindingInput,
  RolloutPlan,
  VersionedGatewayBinding,
} from './resources/gateway-bindings.resource';
export type { ProjectsResource } from './resources/projects.resource';
export type { TenantsResource } from './resources/tenants.resource';
export type { EnvironmentsResource } from './resources/environments.resource';
export type { BillingResource, Budget, BudgetKind, CreditBalance, LowBalanceAlert, LowBalanceCrossing } from './resources/billing.resource';
export type {
  ExperimentDifference,
  ExperimentQuantiles,
  ExperimentQuery,
  ExperimentReport,
  ExperimentVariation,
  UsageDaily,
  UsageExportFile,
  UsageExportQuery,
  UsageFilter,
  UsageResource,
  UsageRow,
  UsageStatus,
  UsageSummary,
  UsageTotals,
} from './resources/usage.resource';
export type { RolloutDecision, RolloutDecisionKind, RolloutsResource, RolloutState, RolloutStatus, RolloutView } from './resources/rollouts.resource';
export type { BillingSession, CheckoutUrls, PlanId, Subscription, SubscriptionResource } from './resources/subscription.resource';
export * from './sdk.types';
export { readServerSentEvents, type ServerSentEvent } from './event-stream';
