/** What is used of a DataSource here (TypeORM stays in repositories and libs/persistence). */
interface Queryable {
  query(sql: string, parameters?: unknown[]): Promise<unknown>;
}

/**
 * The two tenants a repository agreement spec compares across (its own and another, for tenant
 * isolation), each with `environments`. Returns [tenantId, otherTenantId].
 */
export async function seedTwoTenants(ds: Queryable, environments: readonly string[]): Promise<[string, string]> {
  const [{ id: tenantId }, { id: otherTenantId }] = (await ds.query(
    `INSERT INTO tenants (name, primary_email) VALUES ('Acme', 'ops@acme.test'), ('Other', 'ops@other.test') RETURNING id`,
  )) as Array<{ id: string }>;
  for (const t of [tenantId, otherTenantId]) for (const key of environments) await ds.query(`INSERT INTO environments (tenant_id, key, name) VALUES ($1, $2, $2)`, [t, key]);
  return [tenantId as string, otherTenantId as string];
}
