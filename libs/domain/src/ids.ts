const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * True for a UUID string. Ids of tenants, projects and users are Postgres uuids: anything else names
 * nothing, and must not reach a query as a cast error (a 500).
 */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}
