/**
 * The management API's resources as the SDK sends and receives them. Declared here rather than
 * imported from the service's libs: the SDK is published on its own and must not pull them in.
 */

/** ISO 8601 UTC timestamp string. */
export type Timestamp = string;

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

export type FlagType = 'boolean' | 'string' | 'number' | 'json';
export type TenantRole = 'admin' | 'editor' | 'viewer';

/** An OAuth client's scopes; `ai:invoke` is what the AI gateway requires of a client's token. */
export type Scope = 'flags:read' | 'flags:write' | 'flags:evaluate' | 'projects:read' | 'projects:write' | 'ai:invoke';

/** LaunchDarkly's clause operators. */
export type ClauseOperator =
  | 'in'
  | 'startsWith'
  | 'endsWith'
  | 'contains'
  | 'matches'
  | 'lessThan'
  | 'lessThanOrEqual'
  | 'greaterThan'
  | 'greaterThanOrEqual'
  | 'before'
  | 'after'
  | 'semVerEqual'
  | 'semVerLessThan'
  | 'semVerGreaterThan'
  /** The context is in any of the segments whose keys are the values; the attribute is ignored. */
  | 'segmentMatch';

export interface FlagVariation {
  id: string;
  name: string;
  value: JsonValue;
  description: string;
  /** Relative weight in the fallthrough rollout. */
  weight: number;
}

export interface Clause {
  /**
   * A context attribute; `key` is the context key (the evaluated userId). Without `contextKind` the
   * name is taken literally, even when it starts with `/`; with it, an attribute reference (`/a/b`).
   */
  attribute: string;
  /** The context kind read (absent: `user`); when set, `attribute` is an attribute reference, as in LaunchDarkly. */
  contextKind?: string;
  op: ClauseOperator;
  /** Any JSON values, as in LaunchDarkly; one the operator can never use is accepted and reported in the flag's `warnings`. */
  values: JsonValue[];
  negate?: boolean;
}

export interface Rollout {
  variations: Array<{ variationId: string; weight: number }>;
  /** Literal, or an attribute reference with `contextKind`, as a clause's attribute. */
  bucketBy?: string;
  /** The context kind bucketed (absent: `user`); a context without it takes bucket 0. */
  contextKind?: string;
  seed?: number;
}

/** Serves `variationId`, or splits by `rollout`, when every clause matches. */
export interface Rule {
  id: string;
  description?: string;
  clauses: Clause[];
  variationId?: string;
  rollout?: Rollout;
}

export interface Target {
  variationId: string;
  /** Context keys (of `contextKind`). */
  values: string[];
  /** The kind of the keys; absent: `user`. */
  contextKind?: string;
}

export interface Prerequisite {
  key: string;
  variationId: string;
}

/**
 * Which client-side keys of orep-server may evaluate a flag (LaunchDarkly's field): browser keys
 * (`OREP_CLIENT_KEYS`) when `usingEnvironmentId`, mobile keys (`OREP_MOBILE_KEYS`) when
 * `usingMobileKey`. Both false: server keys only. One value for every environment.
 */
export interface ClientSideAvailability {
  usingEnvironmentId: boolean;
  usingMobileKey: boolean;
}

/** A flag as seen in one environment (the seed's fields, then the environment's targeting). */
export interface Flag {
  id: string;
  key: string;
  name: string;
  type: FlagType;
  enabled: boolean;
  defaultValue: JsonValue;
  description: string;
  tags: string[];
  projectId: string | null;
  createdAt: Timestamp;
  updatedAt: Timestamp;
  variations: FlagVariation[];
  clientSideAvailability: ClientSideAvailability;
  /** The environment these targeting fields belong to. */
  environment: string;
  offValue: JsonValue | null;
  targets: Target[];
  rules: Rule[];
  prerequisites: Prerequisite[];
  salt: string | null;
  version: string;
  /** When an evaluator last evaluated the flag in this environment (recorded at most once a minute); null: never. */
  lastEvaluatedAt: Timestamp | null;
  /** Since when it has served one value to everyone here (off, or on with one variation for all); null: it serves several. */
  servingOneVariationSince: Timestamp | null;
  /** Accepted data that can never match in this environment (e.g. a number for `startsWith`); empty when none. */
  warnings: FlagWarning[];
}

/** Where (`rules[0].clauses[1].values[0]`) and why a flag holds something that can never match. */
export interface FlagWarning {
  path: string;
  message: string;
}

/**
 * A flag in LaunchDarkly's server-side SDK data format, as its SDK data files and relay proxy
 * (`/sdk/latest-all`) hold it. Only the fields the import reads are typed.
 */
export interface LaunchDarklyFlag {
  key?: string;
  on?: boolean;
  variations: JsonValue[];
  offVariation?: number | null;
  fallthrough: LaunchDarklyVariationOrRollout;
  targets?: Array<{ values: string[]; variation: number; contextKind?: string }>;
  contextTargets?: Array<{ values: string[]; variation: number; contextKind?: string }>;
  rules?: Array<LaunchDarklyVariationOrRollout & { id?: string; description?: string; clauses: Array<{ attribute: string; op: string; values: JsonValue[]; negate?: boolean; contextKind?: string }>; trackEvents?: boolean }>;
  prerequisites?: Array<{ key: string; variation: number }>;
  salt?: string;
  version?: number;
  deleted?: boolean;
  /** Kept by the import; without it, the legacy `clientSide` (then `usingMobileKey` is true). */
  clientSideAvailability?: { usingEnvironmentId?: boolean; usingMobileKey?: boolean };
  clientSide?: boolean;
  [field: string]: unknown;
}

export interface LaunchDarklyVariationOrRollout {
  variation?: number;
  rollout?: { variations: Array<{ variation: number; weight: number; untracked?: boolean }>; bucketBy?: string; seed?: number; kind?: string; contextKind?: string };
}

/** `{flags: {key: flag}, segments: {key: segment}}` as in LaunchDarkly's SDK data files, or an array of flags. */
export type LaunchDarklySdkData = { flags?: Record<string, LaunchDarklyFlag> | LaunchDarklyFlag[]; segments?: Record<string, unknown>; flagValues?: Record<string, JsonValue> } | LaunchDarklyFlag[];

export interface ImportFlagsResult {
  environment: string;
  /** Keys of flags that did not exist. */
  created: string[];
  /** Keys of flags whose variations and targeting in the environment were replaced. */
  replaced: string[];
  /** The import's segments (`segments` beside `flags`), written in the same transaction. */
  segments: { created: string[]; replaced: string[] };
  /** Tombstones (`deleted: true`), not written. */
  skipped: Array<{ key: string; reason: string }>;
  /** Every imported flag as now seen in the environment, with its warnings. */
  flags: Flag[];
}

/** `change-request` and `schedule` record a step of one (`{id, state}`); the write itself is an `update` as its author. */
export type FlagAuditAction = 'create' | 'update' | 'import' | 'delete' | 'change-request' | 'schedule';

/** One change to a flag, from its audit trail (oldest first). */
export interface FlagAuditEntry {
  action: FlagAuditAction;
  /** `user:{id}` or `client:{clientId}`. */
  actor: string;
  /** The environment whose targeting changed; null when only global fields did. */
  environment: string | null;
  /**
   * update: field -> `{from, to}`, only the fields the request changed; create: the fields sent;
   * import: the imported variations and targeting; delete: empty.
   */
  changes: Record<string, unknown>;
  at: Timestamp;
}

/** A flag and the ETag to send back as `ifMatch` for an update that must not overwrite another. */
export interface VersionedFlag {
  flag: Flag;
  etag: string;
}

/** A variation as sent when creating a flag (the seed's `flag_variations`). */
export interface FlagVariationInput {
  name: string;
  value: JsonValue;
  description?: string;
  weight?: number;
}

export interface CreateFlagInput {
  key: string;
  name: string;
  type: FlagType;
  defaultValue: JsonValue;
  description?: string;
  tags?: string[];
  /** Switch the flag on in the request's environment (default: off everywhere). */
  enabled?: boolean;
  projectId?: string;
  flag_variations?: FlagVariationInput[];
  /** Default: server keys only. */
  clientSideAvailability?: ClientSideAvailability;
}

/** PATCH: omitted fields stay; targeting fields apply to the request's environment. */
export interface UpdateFlagInput {
  name?: string;
  description?: string;
  defaultValue?: JsonValue;
  tags?: string[];
  projectId?: string | null;
  /** The full list of variations, ids included. */
  variations?: FlagVariation[];
  /** For every environment. */
  clientSideAvailability?: ClientSideAvailability;
  enabled?: boolean;
  /** Served when off; null resets to the type's default. */
  offValue?: JsonValue | null;
  targets?: Target[];
  rules?: Rule[];
  prerequisites?: Prerequisite[];
  salt?: string | null;
}

export interface EvaluateInput {
  /** The context key; without it the result is ERROR / USER_NOT_SPECIFIED. */
  userId?: string;
  /** Attributes of the user (`kind` among them does not change the kind: this body is always a user). */
  attributes?: Record<string, JsonValue>;
  /**
   * A LaunchDarkly context instead of userId and attributes: `{kind?, key, ...attributes}` (no kind:
   * a user) or `{kind: 'multi', user: {key, ...}, organization: {key, ...}}`. A malformed one is a 400 naming the field.
   */
  context?: Record<string, JsonValue>;
  /** Environment key; default the client's environment, then production. */
  environment?: string;
}

export type EvaluationReason = 'OFF' | 'PREREQUISITE_FAILED' | 'TARGET_MATCH' | 'RULE_MATCH' | 'FALLTHROUGH' | 'ERROR';

export interface EvaluationResult {
  key: string;
  enabled: boolean;
  value: JsonValue;
  reason: EvaluationReason;
  variationId?: string;
  ruleId?: string;
  ruleIndex?: number;
  errorKind?: 'MALFORMED_FLAG' | 'USER_NOT_SPECIFIED';
}

/** One flag of an export, in the shape the remote evaluation server reads. */
export interface FlagDefinition {
  key: string;
  type: FlagType;
  defaultValue: JsonValue;
  variations: Array<Omit<FlagVariation, 'description'> & { description?: string }>;
  enabled: boolean;
  offValue?: JsonValue;
  targets: Target[];
  rules: Rule[];
  prerequisites: Prerequisite[];
  salt?: string;
  version?: number;
  /** Absent: server keys only. */
  clientSideAvailability?: ClientSideAvailability;
}

/** The flag file orep-server serves (OREP_FLAGS_FILE). */
export interface FlagExport {
  version: number;
  tenantId: string;
  environment: string;
  generatedAt: Timestamp;
  flags: FlagDefinition[];
  /** The environment's segments, which flags name through `segmentMatch`. */
  segments: SegmentDefinition[];
}

/** A segment as evaluators hold it (in an export, and on the flag-data stream). */
export interface SegmentDefinition {
  key: string;
  name: string;
  description?: string;
  included: string[];
  excluded: string[];
  includedContexts: SegmentTarget[];
  excludedContexts: SegmentTarget[];
  rules: SegmentRule[];
  salt?: string;
  version?: number;
}

export interface Project {
  id: string;
  name: string;
  description: string;
  /** `#rrggbb`. */
  color: string;
  flagCount: number;
  createdAt: Timestamp;
  updatedAt: Timestamp;
}

export interface CreateProjectInput {
  name: string;
  description?: string;
  color?: string;
}

export type UpdateProjectInput = Partial<CreateProjectInput>;

export interface Tenant {
  id: string;
  name: string;
  primaryEmail: string;
  contactName: string;
  isSandbox: boolean;
  subscription: { plan: string; status: string };
  createdAt: Timestamp;
}

export interface CreateTenantInput {
  name: string;
  primaryEmail: string;
  contactName?: string;
  isSandbox?: boolean;
}

export interface TenantUser {
  userId: string;
  email: string;
  displayName: string;
  role: TenantRole;
  /** `invited`: added by e-mail and not signed in yet (removing them withdraws the invitation). */
  status: 'active' | 'invited';
  lastAccessedAt: Timestamp | null;
  createdAt: Timestamp;
}

export interface UpdateTenantUserInput {
  role: TenantRole;
}

export interface AddTenantUserInput {
  email: string;
  role: TenantRole;
}

/**
 * An invitation to a tenant. Inviting answers the same whether or not the e-mail has an account;
 * the invitee, signed in with that e-mail verified, accepts or declines it before `expiresAt`
 * (it is withdrawn sooner if its inviter stops being an admin).
 */
export interface Invitation {
  id: string;
  tenantId: string;
  tenantName: string;
  email: string;
  role: TenantRole;
  status: 'pending' | 'accepted' | 'declined';
  createdAt: Timestamp;
  expiresAt: Timestamp;
  respondedAt: Timestamp | null;
}

export interface Environment {
  key: string;
  name: string;
  /** A change to a flag's settings here needs a change request approved by another member. */
  requireApproval: boolean;
  createdAt: Timestamp;
}

/** Tenant admins only: rename, or require approval of changes to the environment's flags. */
export interface UpdateEnvironmentInput {
  name?: string;
  requireApproval?: boolean;
}

export interface CreateEnvironmentInput {
  /** 1-63 lowercase letters, digits or dashes. */
  key: string;
  name: string;
}

/** RFC 9457 problem details, as every management API error carries them. */
export interface Problem {
  /** A relative URI such as `/problems/flag-not-found`, or `about:blank`. */
  type: string;
  title: string;
  status: number;
  detail: string;
  /** The request id. */
  instance?: string;
  /** 422 only: field path -> message. */
  errors?: Record<string, string>;
  [extension: string]: unknown;
}

/** `?limit=&cursor=` of one page of a list. */
export interface PageQuery {
  /** 1..1000, default 100. */
  limit?: number;
  /** Opaque, from the previous page's `Link: rel="next"`. */
  cursor?: string;
}

/** Options of `listAll()` iterators. */
export interface PaginateOptions {
  /** Items per request (1..1000); the server's default (100) when left out. */
  pageSize?: number;
}

/** Per-call overrides of the client's defaults. */
export interface RequestOptions {
  /** X-Tenant-ID for this call. */
  tenantId?: string;
  /** X-Environment for this call. */
  environment?: string;
  /** Replaces the random Idempotency-Key of a POST or PATCH, e.g. to retry a call across restarts. */
  idempotencyKey?: string;
  /** Retries for this call (429, 503, network errors). */
  maxRetries?: number;
  /** Cancels the call, waits between retries included. */
  signal?: AbortSignal;
}

/** Keys of one context kind a segment includes or excludes. */
export interface SegmentTarget {
  contextKind: string;
  values: string[];
}

/** Matches when every clause does (none: every context), then, with `weight`, for that share of contexts. */
export interface SegmentRule {
  id: string;
  clauses: Clause[];
  /** LaunchDarkly's absolute weight: the share included, out of 100000. */
  weight?: number;
  bucketBy?: string;
  rolloutContextKind?: string;
}

/** A segment of one environment (LaunchDarkly's semantics); flags use it through the `segmentMatch` operator. */
export interface Segment {
  key: string;
  name: string;
  description: string;
  environment: string;
  /** User keys always in it. */
  included: string[];
  /** User keys never in it (unless included). */
  excluded: string[];
  includedContexts: SegmentTarget[];
  excludedContexts: SegmentTarget[];
  rules: SegmentRule[];
  /** null: the segment key. */
  salt: string | null;
  version: number;
  createdAt: Timestamp;
  updatedAt: Timestamp;
  /** Accepted data that can never match (e.g. a number for `startsWith`); empty when none. */
  warnings: FlagWarning[];
}

export interface CreateSegmentInput {
  key: string;
  name: string;
  description?: string;
  included?: string[];
  excluded?: string[];
  includedContexts?: SegmentTarget[];
  excludedContexts?: SegmentTarget[];
  rules?: SegmentRule[];
  salt?: string;
}

/** PATCH: the fields sent replace the stored ones (lists whole); omitted ones stay. */
export interface UpdateSegmentInput extends Partial<Omit<CreateSegmentInput, 'key' | 'salt'>> {
  /** null resets it to the segment key. */
  salt?: string | null;
}

/** A segment and the ETag to send back as `ifMatch`. */
export interface VersionedSegment {
  segment: Segment;
  etag: string;
}

/** One change to a segment, from its audit trail (oldest first). */
export interface SegmentAuditEntry {
  action: 'create' | 'update' | 'delete';
  actor: string;
  environment: string;
  /** update: field -> `{from, to}`, only the fields sent; create: the fields sent; delete: empty. */
  changes: Record<string, unknown>;
  at: Timestamp;
}

// ---- Approvals and scheduled changes (CONTRACT.md section 10) ----

export type ChangeRequestState = 'pending' | 'approved' | 'applied' | 'rejected' | 'stale';
export type ScheduledChangeState = 'scheduled' | 'applied' | 'failed' | 'cancelled';

export interface ChangeComment {
  /** `user:{id}` or `client:{clientId}`. */
  author: string;
  body: string;
  at: Timestamp;
}

/** A change to a flag (a PATCH body) waiting for another member's approval. */
export interface ChangeRequest {
  id: string;
  flagKey: string;
  environment: string;
  patch: UpdateFlagInput;
  /** The flag's ETag the request was made against: approved and applied only while the flag is still at it (else ApiError 409 change-request-stale). */
  baseVersion: string;
  /** When set, applying schedules the change for then. */
  executeAt: Timestamp | null;
  state: ChangeRequestState;
  author: string;
  createdAt: Timestamp;
  comments: ChangeComment[];
  decidedBy: string | null;
  decidedAt: Timestamp | null;
  appliedBy: string | null;
  appliedAt: Timestamp | null;
}

export interface CreateChangeRequestInput {
  patch: UpdateFlagInput;
  comment?: string;
  executeAt?: Timestamp;
}

/** A change to a flag (a PATCH body) written at executeAt as its author, once. */
export interface ScheduledChange {
  id: string;
  flagKey: string;
  environment: string;
  patch: UpdateFlagInput;
  executeAt: Timestamp;
  author: string;
  createdAt: Timestamp;
  /** Who approved it, when it came from a change request. */
  approvedBy: string | null;
  state: ScheduledChangeState;
  /** Why it failed: a field it sets changed since it was scheduled (`conflict: ...`), the flag is gone, or the rules refuse it now. */
  reason: string | null;
  finishedAt: Timestamp | null;
}

export interface CreateScheduledChangeInput {
  patch: UpdateFlagInput;
  /** In the future, at most 366 days ahead. */
  executeAt: Timestamp;
}

/** The events a webhook may subscribe to. */
export type WebhookEventType = 'flag.created' | 'flag.updated' | 'flag.deleted' | 'segment.updated' | 'environment.updated' | 'member.updated' | 'credits.low' | 'budget.exceeded';

export interface CreateWebhookInput {
  /** https only in production; it must resolve to public addresses when each delivery is sent. */
  url: string;
  events: WebhookEventType[];
  description?: string;
}

export interface Webhook {
  id: string;
  url: string;
  description: string;
  events: WebhookEventType[];
  /** false once the receiver failed for a day (disabledAt, disabledReason say when and why). */
  enabled: boolean;
  disabledAt: string | null;
  disabledReason: string | null;
  /** Events not queued because 10000 deliveries were already waiting for this receiver. */
  droppedEvents: number;
  createdBy: string | null;
  createdAt: string;
}

/** A new webhook: `secret` (whsec_...) verifies its deliveries (standardwebhooks, svix) and is shown this once. */
export interface WebhookWithSecret extends Webhook {
  secret: string;
}

export interface WebhookAttempt {
  attempt: number;
  attemptedAt: string;
  /** refused: the URL did not resolve to allowed addresses, nothing was sent. */
  outcome: 'delivered' | 'failed' | 'refused';
  responseCode: number | null;
  durationMs: number;
  error: string | null;
}

export interface WebhookDelivery {
  /** The webhook-id header of every attempt. */
  id: string;
  type: WebhookEventType;
  /** The body sent: `{type, timestamp, data}`. */
  payload: Record<string, unknown>;
  status: 'pending' | 'delivered' | 'failed';
  attempts: WebhookAttempt[];
  nextAttemptAt: string | null;
  createdAt: string;
}
