/**
 * OAuth scopes (seed section 5, CONTRACT.md section 3). `ai:invoke` is beyond the seed: the AI
 * gateway requires it, so a client made for reading flags cannot spend the tenant's credits.
 */
export const SCOPES = ['flags:read', 'flags:write', 'flags:evaluate', 'projects:read', 'projects:write', 'ai:invoke'] as const;
export type Scope = (typeof SCOPES)[number];

/** The scope every AI gateway route requires. */
export const AI_INVOKE_SCOPE = 'ai:invoke' satisfies Scope;

export function isScope(value: unknown): value is Scope {
  return typeof value === 'string' && (SCOPES as readonly string[]).includes(value);
}
