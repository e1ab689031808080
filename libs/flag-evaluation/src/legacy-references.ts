import { isPlainObject } from './json-value';
import { namesContextKind, USER_CONTEXT_KIND } from './operators';

/**
 * The version of the flag file (management-api's `GET /api/flags/export`, orep-server's
 * OREP_FLAGS_FILE). 2: clause attributes read as described below; a version-1 file is read through
 * withLegacyReferenceKinds.
 */
export const FLAG_FILE_VERSION = 2;

/**
 * Before clauses and rollouts carried `contextKind`, every attribute starting with `/` (and every
 * such `bucketBy`) was an attribute reference; now, as in LaunchDarkly, one without `contextKind` is
 * a literal name. This gives such rules `contextKind: 'user'` where they need it, so data written
 * before (stored flags, version-1 flag files) keeps its meaning. Attributes not starting with `/`
 * read the same either way and are left alone.
 *
 * Returns the rules unchanged (the same array) when nothing needed it, else a copy; anything not
 * shaped like rules is returned as it is (validation reports it).
 */
export function withLegacyReferenceKinds(rules: unknown): unknown {
  if (!Array.isArray(rules)) return rules;
  let changed = false;
  const out = rules.map((rule: unknown) => {
    if (!isPlainObject(rule)) return rule;
    let next: Record<string, unknown> = rule;
    if (Array.isArray(rule.clauses)) {
      const clauses = (rule.clauses as unknown[]).map((c) => (isPlainObject(c) && needsKind(c.attribute, c.contextKind) ? { ...c, contextKind: USER_CONTEXT_KIND } : c));
      if (clauses.some((c, i) => c !== (rule.clauses as unknown[])[i])) next = { ...next, clauses };
    }
    const rollout = rule.rollout;
    if (isPlainObject(rollout) && needsKind(rollout.bucketBy, rollout.contextKind)) {
      next = { ...next, rollout: { ...rollout, contextKind: USER_CONTEXT_KIND } };
    }
    if (next !== rule) changed = true;
    return next;
  });
  return changed ? out : rules;
}

function needsKind(attribute: unknown, contextKind: unknown): boolean {
  return typeof attribute === 'string' && attribute.startsWith('/') && !namesContextKind(contextKind);
}
