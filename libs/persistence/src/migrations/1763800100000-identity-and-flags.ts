import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Identity (users, memberships, OAuth clients, signing keys, product tours), money (entitlements,
 * credit balances) and flags (projects, environments, flags, per-environment config, audit).
 * Every tenant-owned table carries tenant_id, and its lookups start with it.
 */
export class IdentityAndFlags1763800100000 implements MigrationInterface {
  name = 'IdentityAndFlags1763800100000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE users (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        idp_subject text NOT NULL UNIQUE,
        email text NOT NULL,
        display_name text NOT NULL DEFAULT '',
        sign_in_provider text,
        last_accessed_at timestamptz(3),
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        updated_at timestamptz(3) NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE UNIQUE INDEX users_email_key ON users (lower(email))`);

    await q.query(`
      CREATE TABLE memberships (
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        role text NOT NULL CHECK (role IN ('admin', 'editor', 'viewer')),
        last_accessed_at timestamptz(3),
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        PRIMARY KEY (tenant_id, user_id)
      )`);
    await q.query(`CREATE INDEX memberships_user_idx ON memberships (user_id, created_at)`);

    await q.query(`
      CREATE TABLE oauth_clients (
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        client_id text PRIMARY KEY,
        name text NOT NULL,
        secret_hash text NOT NULL,
        scopes text[] NOT NULL DEFAULT '{}',
        product_keys text[] NOT NULL DEFAULT '{}',
        created_by uuid REFERENCES users(id) ON DELETE SET NULL,
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        secret_rotated_at timestamptz(3),
        deleted_at timestamptz(3)
      )`);
    await q.query(`CREATE INDEX oauth_clients_tenant_idx ON oauth_clients (tenant_id, created_at) WHERE deleted_at IS NULL`);
    // Every app's revocation sweep looks for recently deleted clients.
    await q.query(`CREATE INDEX oauth_clients_deleted_idx ON oauth_clients (deleted_at) WHERE deleted_at IS NOT NULL`);

    await q.query(`
      CREATE TABLE signing_keys (
        kid text PRIMARY KEY,
        alg text NOT NULL DEFAULT 'ES256',
        -- NULL when the private key is configured (env or Secrets Manager) rather than generated here.
        public_jwk jsonb NOT NULL,
        private_jwk jsonb,
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        retired_at timestamptz(3)
      )`);

    await q.query(`
      CREATE TABLE dev_idp_accounts (
        uid text PRIMARY KEY,
        email text NOT NULL,
        password_hash text,
        display_name text NOT NULL DEFAULT '',
        created_at timestamptz(3) NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE UNIQUE INDEX dev_idp_accounts_email_key ON dev_idp_accounts (lower(email))`);
    // The dev identity provider's own signing key, shared by every management-api process.
    await q.query(`
      CREATE TABLE dev_idp_keys (
        kid text PRIMARY KEY,
        public_jwk jsonb NOT NULL,
        private_jwk jsonb NOT NULL,
        created_at timestamptz(3) NOT NULL DEFAULT now()
      )`);

    await q.query(`
      CREATE TABLE product_tours (
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        tour_key text NOT NULL,
        completed boolean NOT NULL DEFAULT false,
        completed_at timestamptz(3),
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        updated_at timestamptz(3) NOT NULL DEFAULT now(),
        PRIMARY KEY (tenant_id, user_id, tour_key)
      )`);

    await q.query(`
      CREATE TABLE entitlements (
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        product_key text NOT NULL,
        tier text NOT NULL CHECK (tier IN ('enterprise', 'enterprise_plus_suite')),
        valid_until timestamptz(3),
        source text NOT NULL DEFAULT 'admin',
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        updated_at timestamptz(3) NOT NULL DEFAULT now(),
        PRIMARY KEY (tenant_id, product_key)
      )`);

    await q.query(`
      CREATE TABLE credit_balances (
        tenant_id uuid PRIMARY KEY REFERENCES tenants(id) ON DELETE CASCADE,
        balance bigint NOT NULL DEFAULT 0,
        reserved bigint NOT NULL DEFAULT 0,
        updated_at timestamptz(3) NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE credit_grants (
        id bigserial PRIMARY KEY,
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        amount bigint NOT NULL,
        reason text NOT NULL,
        granted_by text NOT NULL,
        created_at timestamptz(3) NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX credit_grants_tenant_idx ON credit_grants (tenant_id, created_at)`);

    await q.query(`
      CREATE TABLE projects (
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        name text NOT NULL,
        description text NOT NULL DEFAULT '',
        color text NOT NULL DEFAULT '#6366f1',
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        updated_at timestamptz(3) NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX projects_tenant_idx ON projects (tenant_id, created_at, id)`);

    await q.query(`
      CREATE TABLE environments (
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        key text NOT NULL,
        name text NOT NULL,
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        PRIMARY KEY (tenant_id, key)
      )`);

    await q.query(`
      CREATE TABLE flags (
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        key text NOT NULL,
        project_id uuid REFERENCES projects(id) ON DELETE SET NULL,
        name text NOT NULL,
        type text NOT NULL CHECK (type IN ('boolean', 'string', 'number', 'json')),
        default_value jsonb NOT NULL,
        description text NOT NULL DEFAULT '',
        tags text[] NOT NULL DEFAULT '{}',
        variations jsonb NOT NULL DEFAULT '[]',
        version integer NOT NULL DEFAULT 1,
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        updated_at timestamptz(3) NOT NULL DEFAULT now(),
        UNIQUE (tenant_id, key)
      )`);
    await q.query(`CREATE INDEX flags_project_idx ON flags (tenant_id, project_id)`);

    await q.query(`
      CREATE TABLE flag_environments (
        tenant_id uuid NOT NULL,
        flag_id uuid NOT NULL REFERENCES flags(id) ON DELETE CASCADE,
        environment_key text NOT NULL,
        enabled boolean NOT NULL DEFAULT false,
        off_value jsonb,
        targets jsonb NOT NULL DEFAULT '[]',
        rules jsonb NOT NULL DEFAULT '[]',
        prerequisites jsonb NOT NULL DEFAULT '[]',
        salt text,
        version integer NOT NULL DEFAULT 1,
        updated_at timestamptz(3) NOT NULL DEFAULT now(),
        PRIMARY KEY (flag_id, environment_key),
        FOREIGN KEY (tenant_id, environment_key) REFERENCES environments(tenant_id, key) ON DELETE CASCADE
      )`);
    await q.query(`CREATE INDEX flag_environments_tenant_env_idx ON flag_environments (tenant_id, environment_key)`);

    await q.query(`
      CREATE TABLE flag_audit (
        id bigserial PRIMARY KEY,
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        flag_key text NOT NULL,
        environment_key text,
        action text NOT NULL,
        actor text NOT NULL,
        changes jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz(3) NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX flag_audit_tenant_idx ON flag_audit (tenant_id, flag_key, created_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const t of [
      'flag_audit', 'flag_environments', 'flags', 'environments', 'projects', 'credit_grants', 'credit_balances',
      'entitlements', 'product_tours', 'dev_idp_keys', 'dev_idp_accounts', 'signing_keys', 'oauth_clients', 'memberships', 'users',
    ]) {
      await q.query(`DROP TABLE ${t}`);
    }
  }
}
