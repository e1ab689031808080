import { Inject, Injectable } from '@nestjs/common';
import type { DataSource, EntityManager } from 'typeorm';
import { isUuid, type TenantRole } from '@flagship/domain';
import { DATA_SOURCE } from '@flagship/persistence';

export type InvitationStatus = 'pending' | 'accepted' | 'declined';

export interface InvitationRow {
  id: string;
  tenantId: string;
  tenantName: string;
  email: string;
  role: TenantRole;
  status: InvitationStatus;
  invitedBy: string | null;
  createdAt: Date;
  expiresAt: Date;
  respondedAt: Date | null;
}

/**
 * Invitations to a tenant. The tenant's side (invite, list, withdraw) takes the tenant id first; the
 * invitee's side (list, accept, decline) is keyed by the invitee's verified e-mail, which the
 * invitation names, so nobody reads or answers another person's invitation. A pending invitation
 * past its `expiresAt` is invisible to every read: it can be neither listed nor answered.
 * The clock is the store's (Postgres' now() in the real one).
 */
export abstract class InvitationsRepository {
  /**
   * Whether a member of the tenant has this e-mail: one statement, whether or not the e-mail has an
   * account, so the inviter's request does the same work either way.
   */
  abstract isMemberByEmail(m: EntityManager, tenantId: string, email: string): Promise<boolean>;
  /**
   * The user's role in the tenant, their membership locked (shared) until the transaction ends: a
   * demotion waits for the invitation being written, and then withdraws it.
   */
  abstract lockRole(m: EntityManager, tenantId: string, userId: string): Promise<TenantRole | null>;
  /** Deletes the tenant's pending invitations that have expired (they hold the e-mail's pending slot). */
  abstract purgeExpired(m: EntityManager, tenantId: string): Promise<void>;
  /** Whether the tenant has an unexpired pending invitation of this e-mail (re-inviting it adds none). */
  abstract hasPending(m: EntityManager, tenantId: string, email: string): Promise<boolean>;
  /** The tenant's pending invitation of this e-mail, new or with role, inviter and expiry replaced (one per tenant and e-mail). */
  abstract upsertPending(m: EntityManager, tenantId: string, email: string, role: TenantRole, invitedBy: string | null, ttlMs: number): Promise<InvitationRow>;
  abstract pendingOfTenant(tenantId: string): Promise<InvitationRow[]>;
  /** Withdraws a pending invitation; whether there was one. */
  abstract deletePending(tenantId: string, invitationId: string): Promise<boolean>;
  /** Withdraws every pending invitation the user sent in the tenant; how many. */
  abstract deletePendingInvitedBy(m: EntityManager, tenantId: string, userId: string): Promise<number>;
  abstract pendingForEmail(email: string): Promise<InvitationRow[]>;
  /** The invitee's pending invitation, locked until the transaction ends; null when it is not theirs, not pending, or expired. */
  abstract lockPendingForEmail(m: EntityManager, invitationId: string, email: string): Promise<InvitationRow | null>;
  abstract respond(m: EntityManager, tenantId: string, invitationId: string, status: Exclude<InvitationStatus, 'pending'>): Promise<Date>;
  /** Accepting: a membership with the invitation's role unless there is one already (its role is kept); whether it was added. */
  abstract joinTenant(m: EntityManager, tenantId: string, userId: string, role: TenantRole): Promise<boolean>;
}

const COLUMNS = `i.id, i.tenant_id, t.name AS tenant_name, i.email, i.role, i.status, i.invited_by, i.created_at, i.expires_at, i.responded_at`;
const LIVE = `i.status = 'pending' AND i.expires_at > now()`;

@Injectable()
export class SqlInvitationsRepository extends InvitationsRepository {
  constructor(@Inject(DATA_SOURCE) private readonly ds: DataSource) {
    super();
  }

  async isMemberByEmail(m: EntityManager, tenantId: string, email: string): Promise<boolean> {
    const rows: unknown[] = await m.query(
      `SELECT 1 FROM memberships ms JOIN users u ON u.id = ms.user_id WHERE ms.tenant_id = $1 AND lower(u.email) = lower($2) LIMIT 1`,
      [tenantId, email],
    );
    return rows.length > 0;
  }

  async lockRole(m: EntityManager, tenantId: string, userId: string): Promise<TenantRole | null> {
    const rows: Array<{ role: TenantRole }> = await m.query(`SELECT role FROM memberships WHERE tenant_id = $1 AND user_id = $2 FOR SHARE`, [tenantId, userId]);
    return rows[0]?.role ?? null;
  }

  async purgeExpired(m: EntityManager, tenantId: string): Promise<void> {
    await m.query(`DELETE FROM invitations WHERE tenant_id = $1 AND status = 'pending' AND expires_at <= now()`, [tenantId]);
  }

  async hasPending(m: EntityManager, tenantId: string, email: string): Promise<boolean> {
    const rows: unknown[] = await m.query(`SELECT 1 FROM invitations i WHERE i.tenant_id = $1 AND lower(i.email) = lower($2) AND ${LIVE}`, [tenantId, email]);
    return rows.length > 0;
  }

  async upsertPending(m: EntityManager, tenantId: string, email: string, role: TenantRole, invitedBy: string | null, ttlMs: number): Promise<InvitationRow> {
    const rows: Array<Record<string, unknown>> = await m.query(
      `WITH i AS (
         INSERT INTO invitations (tenant_id, email, role, invited_by, expires_at) VALUES ($1, $2, $3, $4, now() + $5 * interval '1 millisecond')
         ON CONFLICT (tenant_id, lower(email)) WHERE status = 'pending'
         DO UPDATE SET role = EXCLUDED.role, invited_by = EXCLUDED.invited_by, expires_at = EXCLUDED.expires_at
         RETURNING *
       )
       SELECT ${COLUMNS} FROM i JOIN tenants t ON t.id = i.tenant_id WHERE i.tenant_id = $1`,
      [tenantId, email, role, invitedBy, ttlMs],
    );
    return toRow(rows[0]);
  }

  async pendingOfTenant(tenantId: string): Promise<InvitationRow[]> {
    const rows: Array<Record<string, unknown>> = await this.ds.query(
      `SELECT ${COLUMNS} FROM invitations i JOIN tenants t ON t.id = i.tenant_id
       WHERE i.tenant_id = $1 AND ${LIVE} ORDER BY i.created_at, i.id LIMIT 1000`,
      [tenantId],
    );
    return rows.map(toRow);
  }

  async deletePending(tenantId: string, invitationId: string): Promise<boolean> {
    if (!isUuid(invitationId)) return false;
    // TypeORM answers an UPDATE or DELETE with [rows, affected].
    const [, affected] = (await this.ds.query(`DELETE FROM invitations i WHERE i.tenant_id = $1 AND i.id = $2 AND ${LIVE}`, [tenantId, invitationId])) as [unknown, number];
    return affected === 1;
  }

  async deletePendingInvitedBy(m: EntityManager, tenantId: string, userId: string): Promise<number> {
    const [, affected] = (await m.query(`DELETE FROM invitations WHERE tenant_id = $1 AND invited_by = $2 AND status = 'pending'`, [tenantId, userId])) as [unknown, number];
    return affected;
  }

  async pendingForEmail(email: string): Promise<InvitationRow[]> {
    const rows: Array<Record<string, unknown>> = await this.ds.query(
      `SELECT ${COLUMNS} FROM invitations i JOIN tenants t ON t.id = i.tenant_id
       WHERE lower(i.email) = lower($1) AND ${LIVE} ORDER BY i.created_at, i.id LIMIT 1000`,
      [email],
    );
    return rows.map(toRow);
  }

  async lockPendingForEmail(m: EntityManager, invitationId: string, email: string): Promise<InvitationRow | null> {
    if (!isUuid(invitationId)) return null;
    const rows: Array<Record<string, unknown>> = await m.query(
      `SELECT ${COLUMNS} FROM invitations i JOIN tenants t ON t.id = i.tenant_id
       WHERE i.id = $1 AND lower(i.email) = lower($2) AND ${LIVE} FOR UPDATE OF i`,
      [invitationId, email],
    );
    return rows.length ? toRow(rows[0]) : null;
  }

  async respond(m: EntityManager, tenantId: string, invitationId: string, status: Exclude<InvitationStatus, 'pending'>): Promise<Date> {
    const [rows] = (await m.query(
      `UPDATE invitations SET status = $3, responded_at = now() WHERE tenant_id = $1 AND id = $2 RETURNING responded_at`,
      [tenantId, invitationId, status],
    )) as [Array<{ responded_at: Date }>, number];
    return rows[0].responded_at;
  }

  async joinTenant(m: EntityManager, tenantId: string, userId: string, role: TenantRole): Promise<boolean> {
    const rows: unknown[] = await m.query(
      `INSERT INTO memberships (tenant_id, user_id, role) VALUES ($1, $2, $3) ON CONFLICT (tenant_id, user_id) DO NOTHING RETURNING user_id`,
      [tenantId, userId, role],
    );
    return rows.length === 1;
  }
}

function toRow(r: Record<string, unknown>): InvitationRow {
  return {
    id: r['id'] as string,
    tenantId: r['tenant_id'] as string,
    tenantName: r['tenant_name'] as string,
    email: r['email'] as string,
    role: r['role'] as TenantRole,
    status: r['status'] as InvitationStatus,
    invitedBy: (r['invited_by'] as string | null) ?? null,
    createdAt: r['created_at'] as Date,
    expiresAt: r['expires_at'] as Date,
    respondedAt: (r['responded_at'] as Date | null) ?? null,
  };
}
