/**
 * The SDK's hand-written types against the OpenAPI document, at the type level: `npm run typecheck`
 * fails when they drift (openapi.generated.ts is openapi-typescript's rendering of the checked-in
 * document, kept current by openapi.generated.spec.ts). Nothing here runs; nothing imports it.
 *
 * Answers: what the operation's document says the server sends must fit the SDK's type (a field the
 * SDK promises and the server does not send fails). Requests: what the SDK sends must fit the
 * operation's request body or query, and name no field the server does not know (it refuses unknown
 * fields).
 *
 * Coverage: every operation of the document is either checked here (it names itself in a group's
 * union only when its checks hold) or listed in `NotInSdk` with the reason; a new operation that is
 * neither fails `EveryOperationCovered`, naming it.
 */
import type { operations } from './openapi.generated';
import type * as sdk from './index';

type Fits<A, B> = [A] extends [B] ? true : false;
type NoUnknownKeys<A, B> = Exclude<keyof A, keyof B> extends never ? true : false;
type Check<T extends true> = T;

type Answer<Op extends keyof operations, Status extends number> = operations[Op]['responses'] extends infer R
  ? Status extends keyof R
    ? R[Status] extends { content: { 'application/json': infer Body } }
      ? Body
      : never
    : never
  : never;
type Sent<Op extends keyof operations> = NonNullable<operations[Op]['requestBody']> extends { content: { 'application/json': infer Body } } ? Body : never;
type Query<Op extends keyof operations> = operations[Op]['parameters'] extends { query?: infer Q } ? NonNullable<Q> : never;

/** The document's answer fits the SDK type (and exists: `never` would fit anything). */
type Reads<Op extends keyof operations, Status extends number, T> = [Answer<Op, Status>] extends [never] ? false : Fits<Answer<Op, Status>, T>;
/** The SDK's input fits the request body and names no field the server does not declare. */
type Writes<Op extends keyof operations, T> = [Sent<Op>] extends [never] ? false : Fits<T, Sent<Op>> extends true ? NoUnknownKeys<T, Sent<Op>> : false;
/** The SDK's query parameters fit the operation's and name none the server does not declare. */
type Asks<Op extends keyof operations, T> = [Query<Op>] extends [never] ? false : Fits<T, Query<Op>> extends true ? NoUnknownKeys<T, Query<Op>> : false;
/** The operation answers `Status` with no body (the SDK resolves `void`). */
type Empty<Op extends keyof operations, Status extends number> = Status extends keyof operations[Op]['responses'] ? true : false;

/** The operation answers 200 with an event stream (FlagshipInProcessProvider reads it). */
type StreamsEvents<Op extends keyof operations> = operations[Op]['responses'] extends { 200: { content: { 'text/event-stream': string } } } ? true : false;

/** The operation answers 200 with a file of `Type` (a download the SDK hands over unread). */
type Downloads<Op extends keyof operations, Type extends string> = operations[Op]['responses'] extends { 200: { content: { [K in Type]: string } } } ? true : false;

/** `Op` when every check of it holds; a type error at the failing check otherwise. */
type Op<Id extends keyof operations, _Checks extends true[]> = Id;

export type GatewayBindingsCovered =
  | Op<'GatewayBindings_list', [Reads<'GatewayBindings_list', 200, sdk.GatewayBinding[]>]>
  | Op<'GatewayBindings_get', [Reads<'GatewayBindings_get', 200, sdk.GatewayBinding>]>
  | Op<'GatewayBindings_put', [Reads<'GatewayBindings_put', 200, sdk.GatewayBinding>, Writes<'GatewayBindings_put', sdk.PutGatewayBindingInput>]>
  | Op<'GatewayBindings_remove', [Empty<'GatewayBindings_remove', 204>]>
  | Op<'GatewayBindings_audit', [Reads<'GatewayBindings_audit', 200, sdk.GatewayBindingAuditEntry[]>]>;

export type FlagsCovered =
  | Op<'Flags_list', [Reads<'Flags_list', 200, sdk.Flag[]>]>
  | Op<'Flags_get', [Reads<'Flags_get', 200, sdk.Flag>]>
  | Op<'Flags_create', [Reads<'Flags_create', 201, sdk.Flag>, Writes<'Flags_create', sdk.CreateFlagInput>]>
  | Op<'Flags_createInProject', [Reads<'Flags_createInProject', 201, sdk.Flag>, Writes<'Flags_createInProject', Omit<sdk.CreateFlagInput, 'projectId'>>]>
  | Op<'Flags_update', [Reads<'Flags_update', 200, sdk.Flag>, Writes<'Flags_update', sdk.UpdateFlagInput>]>
  | Op<'Flags_remove', [Empty<'Flags_remove', 204>]>
  | Op<'Flags_variations', [Reads<'Flags_variations', 200, sdk.FlagVariation[]>]>
  | Op<'Flags_evaluate', [Reads<'Flags_evaluate', 200, sdk.EvaluationResult>, Writes<'Flags_evaluate', sdk.EvaluateInput>]>
  | Op<'Flags_evaluateInProject', [Reads<'Flags_evaluateInProject', 200, sdk.EvaluationResult>]>
  | Op<'Flags_export', [Reads<'Flags_export', 200, sdk.FlagExport>]>
  | Op<'Flags_audit', [Reads<'Flags_audit', 200, sdk.FlagAuditEntry[]>]>
  | Op<'Flags_importLaunchDarkly', [Reads<'Flags_importLaunchDarkly', 200, sdk.ImportFlagsResult>, Writes<'Flags_importLaunchDarkly', sdk.LaunchDarklySdkData>]>
  | Op<'FlagStream_stream', [StreamsEvents<'FlagStream_stream'>]>;

export type SegmentsCovered =
  | Op<'Segments_list', [Reads<'Segments_list', 200, sdk.Segment[]>, Asks<'Segments_list', sdk.PageQuery>]>
  | Op<'Segments_get', [Reads<'Segments_get', 200, sdk.Segment>]>
  | Op<'Segments_create', [Reads<'Segments_create', 201, sdk.Segment>, Writes<'Segments_create', sdk.CreateSegmentInput>]>
  | Op<'Segments_update', [Reads<'Segments_update', 200, sdk.Segment>, Writes<'Segments_update', sdk.UpdateSegmentInput>]>
  | Op<'Segments_remove', [Empty<'Segments_remove', 204>]>
  | Op<'Segments_audit', [Reads<'Segments_audit', 200, sdk.SegmentAuditEntry[]>]>;

export type WebhooksCovered =
  | Op<'Webhooks_list', [Reads<'Webhooks_list', 200, sdk.Webhook[]>, Asks<'Webhooks_list', sdk.PageQuery>]>
  | Op<'Webhooks_create', [Reads<'Webhooks_create', 201, sdk.WebhookWithSecret>, Writes<'Webhooks_create', sdk.CreateWebhookInput>]>
  | Op<'Webhooks_remove', [Empty<'Webhooks_remove', 204>]>
  | Op<'Webhooks_deliveries', [Reads<'Webhooks_deliveries', 200, sdk.WebhookDelivery[]>, Asks<'Webhooks_deliveries', sdk.PageQuery>]>
  | Op<'Webhooks_replay', [Empty<'Webhooks_replay', 202>]>;

export type ProjectsCovered =
  | Op<'Projects_list', [Reads<'Projects_list', 200, sdk.Project[]>]>
  | Op<'Projects_get', [Reads<'Projects_get', 200, sdk.Project>]>
  | Op<'Projects_create', [Reads<'Projects_create', 201, sdk.Project>, Writes<'Projects_create', sdk.CreateProjectInput>]>
  | Op<'Projects_update', [Reads<'Projects_update', 200, sdk.Project>, Writes<'Projects_update', sdk.UpdateProjectInput>]>;

export type TenantsCovered =
  | Op<'Tenants_list', [Reads<'Tenants_list', 200, sdk.Tenant[]>]>
  | Op<'Tenants_create', [Reads<'Tenants_create', 201, sdk.Tenant>, Writes<'Tenants_create', sdk.CreateTenantInput>]>
  | Op<'Tenants_users', [Reads<'Tenants_users', 200, sdk.TenantUser[]>]>
  | Op<'Tenants_addUser', [Reads<'Tenants_addUser', 201, sdk.Invitation>, Writes<'Tenants_addUser', sdk.AddTenantUserInput>]>
  | Op<'Tenants_invitationsOf', [Reads<'Tenants_invitationsOf', 200, sdk.Invitation[]>]>
  | Op<'Tenants_withdrawInvitation', [Empty<'Tenants_withdrawInvitation', 204>]>
  | Op<'Invitations_list', [Reads<'Invitations_list', 200, sdk.Invitation[]>]>
  | Op<'Invitations_accept', [Reads<'Invitations_accept', 200, sdk.Invitation>]>
  | Op<'Invitations_decline', [Reads<'Invitations_decline', 200, sdk.Invitation>]>
  | Op<'Tenants_changeRole', [Reads<'Tenants_changeRole', 200, sdk.TenantUser>, Writes<'Tenants_changeRole', sdk.UpdateTenantUserInput>]>
  | Op<'Tenants_removeUser', [Empty<'Tenants_removeUser', 204>]>;

export type EnvironmentsCovered =
  | Op<'Environments_list', [Reads<'Environments_list', 200, sdk.Environment[]>]>
  | Op<'Environments_create', [Reads<'Environments_create', 201, sdk.Environment>, Writes<'Environments_create', sdk.CreateEnvironmentInput>]>
  | Op<'Environments_update', [Reads<'Environments_update', 200, sdk.Environment>, Writes<'Environments_update', sdk.UpdateEnvironmentInput>]>;

export type FlagChangesCovered =
  | Op<'FlagChanges_listRequests', [Reads<'FlagChanges_listRequests', 200, sdk.ChangeRequest[]>]>
  | Op<'FlagChanges_getRequest', [Reads<'FlagChanges_getRequest', 200, sdk.ChangeRequest>]>
  | Op<'FlagChanges_createRequest', [Reads<'FlagChanges_createRequest', 201, sdk.ChangeRequest>, Writes<'FlagChanges_createRequest', sdk.CreateChangeRequestInput>]>
  | Op<'FlagChanges_comment', [Reads<'FlagChanges_comment', 200, sdk.ChangeRequest>, Writes<'FlagChanges_comment', { comment: string }>]>
  | Op<'FlagChanges_approve', [Reads<'FlagChanges_approve', 200, sdk.ChangeRequest>, Writes<'FlagChanges_approve', { comment?: string }>]>
  | Op<'FlagChanges_reject', [Reads<'FlagChanges_reject', 200, sdk.ChangeRequest>, Writes<'FlagChanges_reject', { comment?: string }>]>
  | Op<'FlagChanges_apply', [Reads<'FlagChanges_apply', 200, sdk.ChangeRequest>]>
  | Op<'FlagChanges_listScheduled', [Reads<'FlagChanges_listScheduled', 200, sdk.ScheduledChange[]>]>
  | Op<'FlagChanges_schedule', [Reads<'FlagChanges_schedule', 201, sdk.ScheduledChange>, Writes<'FlagChanges_schedule', sdk.CreateScheduledChangeInput>]>
  | Op<'FlagChanges_cancel', [Empty<'FlagChanges_cancel', 204>]>;

/** `billing.credits()`, `subscription.*` (checkout serves both `checkout(plan)` and `buyCredits(amount)`). */
export type BillingCovered =
  | Op<'Credits_get', [Reads<'Credits_get', 200, sdk.CreditBalance>]>
  | Op<'LowBalance_get', [Reads<'LowBalance_get', 200, sdk.LowBalanceAlert>]>
  | Op<'LowBalance_put', [Reads<'LowBalance_put', 200, sdk.LowBalanceAlert>, Writes<'LowBalance_put', { threshold: number }>]>
  | Op<'LowBalance_remove', [Empty<'LowBalance_remove', 204>]>
  | Op<'LowBalance_crossings', [Reads<'LowBalance_crossings', 200, sdk.LowBalanceCrossing[]>, Asks<'LowBalance_crossings', sdk.PageQuery>]>
  | Op<'Budgets_list', [Reads<'Budgets_list', 200, sdk.Budget[]>, Asks<'Budgets_list', sdk.PageQuery>]>
  | Op<'Budgets_put', [Reads<'Budgets_put', 200, sdk.Budget>, Writes<'Budgets_put', { monthlyCapMicroCredits: number }>]>
  | Op<'Budgets_remove', [Empty<'Budgets_remove', 204>]>
  | Op<'StripeBilling_subscription', [Reads<'StripeBilling_subscription', 200, sdk.Subscription>]>
  | Op<
      'StripeBilling_checkout',
      [
        Reads<'StripeBilling_checkout', 200, sdk.BillingSession>,
        Writes<'StripeBilling_checkout', { type: 'subscription'; planId: sdk.PlanId } & sdk.CheckoutUrls>,
        Writes<'StripeBilling_checkout', { type: 'credits'; amount: number } & sdk.CheckoutUrls>,
      ]
    >
  | Op<'StripeBilling_portal', [Reads<'StripeBilling_portal', 200, sdk.BillingSession>, Writes<'StripeBilling_portal', { returnUrl: string; productKey?: string }>]>;

export type UsageCovered =
  | Op<'Usage_list', [Reads<'Usage_list', 200, sdk.UsageRow[]>, Asks<'Usage_list', sdk.UsageFilter & sdk.PageQuery>]>
  | Op<'Usage_summary', [Reads<'Usage_summary', 200, sdk.UsageSummary>, Asks<'Usage_summary', sdk.UsageFilter>]>
  | Op<'Experiments_report', [Reads<'Experiments_report', 200, sdk.ExperimentReport>, Asks<'Experiments_report', sdk.ExperimentQuery>]>
  | Op<'Rollouts_rollout', [Reads<'Rollouts_rollout', 200, sdk.RolloutView>]>
  | Op<'Usage_export', [Downloads<'Usage_export', 'text/csv'>, Downloads<'Usage_export', 'application/jsonl'>, Asks<'Usage_export', sdk.UsageExportQuery>]>
  | Op<'Usage_daily', [Reads<'Usage_daily', 200, sdk.UsageDaily>, Asks<'Usage_daily', sdk.UsageFilter>]>;

/** Operations the SDK leaves out on purpose: not a tenant backend's business, or done by other means. */
type NotInSdk =
  // OAuth endpoints: the SDK's client-credentials auth calls /oauth/token itself; metadata and JWKS are for verifiers.
  | 'OAuthToken_token'
  | 'OAuthMetadata_jwks'
  | 'OAuthMetadata_document'
  // Managing OAuth clients, signing up and in, password resets: the web console's, with a user's session.
  | 'OAuthClients_list'
  | 'OAuthClients_create'
  | 'OAuthClients_remove'
  | 'OAuthClients_rotate'
  | 'Auth_signup'
  | 'Auth_login'
  | 'Auth_signin'
  | 'Auth_forgotPassword'
  // How a browser frontend signs in (dev form or the OIDC authorization-code flow): read by the console before any session exists.
  | 'Auth_config'
  // Platform administration.
  | 'Admin_users'
  | 'Admin_grantEntitlement'
  | 'Admin_grantCredits'
  | 'Admin_patchTenant'
  // Console features: product tours, the sandbox.
  | 'ProductTours_get'
  | 'ProductTours_put'
  | 'Sandbox_status'
  | 'Sandbox_indicators'
  | 'Sandbox_demoData'
  // The development identity provider (IDP_MODE=dev only).
  | 'DevIdp_createAccount'
  | 'DevIdp_token'
  | 'DevIdp_jwks';

type Covered = FlagsCovered | FlagChangesCovered | SegmentsCovered | WebhooksCovered | ProjectsCovered | TenantsCovered | EnvironmentsCovered | BillingCovered | UsageCovered | GatewayBindingsCovered;
type Uncovered = Exclude<keyof operations, Covered | NotInSdk>;
/** Fails (naming them) when the document has operations neither checked nor left out on purpose. */
export type EveryOperationCovered = Check<[Uncovered] extends [never] ? true : { uncovered: Uncovered }>;
/** A name left out that the document no longer has fails too. */
export type NotInSdkExists = Check<[Exclude<NotInSdk, keyof operations>] extends [never] ? true : { unknown: Exclude<NotInSdk, keyof operations> }>;

/** The SDK's `Scope` is exactly the scopes a client may be created with. */
type DocumentScope = NonNullable<operations['OAuthClients_create']['requestBody']>['content']['application/json']['scopes'][number];
export type ScopesConform = [Check<Fits<sdk.Scope, DocumentScope>>, Check<Fits<DocumentScope, sdk.Scope>>];

/** Every error the document declares is a problem the SDK's `Problem` reads. */
type ProblemAnswer = operations['Flags_update']['responses'][412]['content']['application/problem+json'];
type ValidationAnswer = operations['Flags_create']['responses'][422]['content']['application/problem+json'];
export type ProblemsConform = [Check<Fits<ProblemAnswer, sdk.Problem>>, Check<Fits<ValidationAnswer, sdk.Problem & { errors: Record<string, string> }>>];
