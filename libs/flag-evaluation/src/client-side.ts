import { isPlainObject } from './json-value';
import type { ClientSideAvailability } from './types';

/** A flag without `clientSideAvailability`: evaluated with server keys only. */
export const SERVER_ONLY: Readonly<ClientSideAvailability> = Object.freeze({ usingEnvironmentId: false, usingMobileKey: false });

/** The kinds of client-side key, named after the field of ClientSideAvailability that admits them. */
export type ClientSideKeyKind = keyof ClientSideAvailability;

/**
 * A stored flag's availability, read defensively (it came from a database or a file): a field is
 * true only when it is the boolean true, so anything malformed keeps the flag server-only.
 */
export function clientSideAvailabilityOf(value: unknown): Readonly<ClientSideAvailability> {
  if (!isPlainObject(value)) return SERVER_ONLY;
  const usingEnvironmentId = value.usingEnvironmentId === true;
  const usingMobileKey = value.usingMobileKey === true;
  return usingEnvironmentId || usingMobileKey ? Object.freeze({ usingEnvironmentId, usingMobileKey }) : SERVER_ONLY;
}
