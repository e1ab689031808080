/** OAuth scopes (seed section 5). */
export const SCOPES = ['flags:read', 'flags:write', 'flags:evaluate', 'projects:read', 'projects:write'] as const;
export type Scope = (typeof SCOPES)[number];

export function isScope(value: unknown): value is Scope {
  return typeof value === 'string' && (SCOPES as readonly string[]).includes(value);
}
