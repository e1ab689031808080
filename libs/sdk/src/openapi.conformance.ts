/**
 * The SDK's hand-written types against the OpenAPI document, at the type level: `npm run typecheck`
 * fails when they drift (openapi.generated.ts is openapi-typescript's rendering of the checked-in
 * document, kept current by openapi.generated.spec.ts). Nothing here runs; nothing imports it.
 *
 * Answers: what the operation's document says the server sends must fit the SDK's type (a field the
 * SDK promises and the server does not send fails). Requests: what the SDK sends must fit the
 * operation's request body, and name no field the server does not know (it refuses unknown fields).
 */
import type { operations } from './openapi.generated';
import type * as sdk from './sdk.types';

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

/** The document's answer fits the SDK type (and exists: `never` would fit anything). */
type Reads<Op extends keyof operations, Status extends number, T> = [Answer<Op, Status>] extends [never] ? false : Fits<Answer<Op, Status>, T>;
/** The SDK's input fits the request body and names no field the server does not declare. */
type Writes<Op extends keyof operations, T> = [Sent<Op>] extends [never] ? false : Fits<T, Sent<Op>> extends true ? NoUnknownKeys<T, Sent<Op>> : false;

export type FlagsConform = [
  Check<Reads<'Flags_list', 200, sdk.Flag[]>>,
  Check<Reads<'Flags_get', 200, sdk.Flag>>,
  Check<Reads<'Flags_create', 201, sdk.Flag>>,
  Check<Reads<'Flags_createInProject', 201, sdk.Flag>>,
  Check<Reads<'Flags_update', 200, sdk.Flag>>,
  Check<Reads<'Flags_variations', 200, sdk.FlagVariation[]>>,
  Check<Reads<'Flags_evaluate', 200, sdk.EvaluationResult>>,
  Check<Reads<'Flags_evaluateInProject', 200, sdk.EvaluationResult>>,
  Check<Reads<'Flags_export', 200, sdk.FlagExport>>,
  Check<Reads<'Flags_audit', 200, sdk.FlagAuditEntry[]>>,
  Check<Writes<'Flags_create', sdk.CreateFlagInput>>,
  Check<Writes<'Flags_createInProject', Omit<sdk.CreateFlagInput, 'projectId'>>>,
  Check<Writes<'Flags_update', sdk.UpdateFlagInput>>,
  Check<Writes<'Flags_evaluate', sdk.EvaluateInput>>,
];

export type ProjectsConform = [
  Check<Reads<'Projects_list', 200, sdk.Project[]>>,
  Check<Reads<'Projects_get', 200, sdk.Project>>,
  Check<Reads<'Projects_create', 201, sdk.Project>>,
  Check<Reads<'Projects_update', 200, sdk.Project>>,
  Check<Writes<'Projects_create', sdk.CreateProjectInput>>,
  Check<Writes<'Projects_update', sdk.UpdateProjectInput>>,
];

export type TenantsConform = [
  Check<Reads<'Tenants_list', 200, sdk.Tenant[]>>,
  Check<Reads<'Tenants_create', 201, sdk.Tenant>>,
  Check<Reads<'Tenants_users', 200, sdk.TenantUser[]>>,
  Check<Reads<'Tenants_addUser', 201, sdk.TenantUser>>,
  Check<Writes<'Tenants_create', sdk.CreateTenantInput>>,
  Check<Writes<'Tenants_addUser', sdk.AddTenantUserInput>>,
];

export type EnvironmentsConform = [
  Check<Reads<'Environments_list', 200, sdk.Environment[]>>,
  Check<Reads<'Environments_create', 201, sdk.Environment>>,
  Check<Writes<'Environments_create', sdk.CreateEnvironmentInput>>,
];

/** Every error the document declares is a problem the SDK's `Problem` reads. */
type ProblemAnswer = operations['Flags_update']['responses'][412]['content']['application/problem+json'];
type ValidationAnswer = operations['Flags_create']['responses'][422]['content']['application/problem+json'];
export type ProblemsConform = [Check<Fits<ProblemAnswer, sdk.Problem>>, Check<Fits<ValidationAnswer, sdk.Problem & { errors: Record<string, string> }>>];
