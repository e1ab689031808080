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
  createdAt: Date;
  respondedAt: Date | null;
}

const COLUMNS = `i.id, i.tenant_id, t.name AS tenant_name, i.email, i.role, i.status, i.created_at, i.responded_at`;

/**
 * Invitations to a tenant. The tenant's side (invite, list, withdraw) takes the tenant id first; the
 * invitee's side (list, accept, decline) is keyed by the invitee's verified e-mail, which the
 * invitation names, so nobody reads or answers another person's invitation.
 */
@Injectable()
export class InvitationsRepository {
  constructor(@Inject(DATA_SOURCE) private readonly ds: DataSource) {}

  /** The tenant's pending invitation of this e-mail, new or with its role replaced (one per tenant and e-mail). */
  async upsertPending(m: EntityManager, tenantId: string, email: string, role: TenantRole, invitedBy: string | null): Promise<InvitationRow> {
    const rows: Array<Record<string, unknown>> = await m.query(
      `WITH i AS (
         INSERT INTO invitations (tenant_id, email, role, invited_by) VALUES ($1, $2, $3, $4)
         ON CONFLICT (tenant_id, lower(email)) WHERE status = 'pending' DO UPDATE SET role = EXCLUDED.role, invited_by = EXCLUDED.invited_by
         RETURNING *
       )
       SELECT ${COLUMNS} FROM i JOIN tenants t ON t.id = i.tenant_id WHERE i.tenant_id = $1`,
      [tenantId, email, role, invitedBy],
    );
    return toRow(rows[0]);
  }

  async pendingOfTenant(tenantId: string): Promise<InvitationRow[]> {
    const rows: Array<Record<string, unknown>> = await this.ds.query(
      `SELECT ${COLUMNS} FROM invitations i JOIN tenants t ON t.id = i.tenant_id
       WHERE i.tenant_id = $1 AND i.status = 'pending' ORDER BY i.created_at, i.id LIMIT 1000`,
      [tenantId],
    );
    return rows.map(toRow);
  }

  /** Withdraws a pending invitation; whether there was one. */
  async deletePending(tenantId: string, invitationId: string): Promise<boolean> {
    if (!isUuid(invitationId)) return false;
    // TypeORM answers an UPDATE or DELETE with [rows, affected].
    const [, affected] = (await this.ds.query(`DELETE FROM invitations WHERE tenant_id = $1 AND id = $2 AND status = 'pending'`, [tenantId, invitationId])) as [unknown, number];
    return affected === 1;
  }

  async pendingForEmail(email: string): Promise<InvitationRow[]> {
    const rows: Array<Record<string, unknown>> = await this.ds.query(
      `SELECT ${COLUMNS} FROM invitations i JOIN tenants t ON t.id = i.tenant_id
       WHERE lower(i.email) = lower($1) AND i.status = 'pending' ORDER BY i.created_at, i.id LIMIT 1000`,
      [email],
    );
    return rows.map(toRow);
  }

  /** The invitee's pending invitation, locked until the transaction ends; null when it is not theirs or not pending. */
  async lockPendingForEmail(m: EntityManager, invitationId: string, email: string): Promise<InvitationRow | null> {
    if (!isUuid(invitationId)) return null;
    const rows: Array<Record<string, unknown>> = await m.query(
      `SELECT ${COLUMNS} FROM invitations i JOIN tenants t ON t.id = i.tenant_id
       WHERE i.id = $1 AND lower(i.email) = lower($2) AND i.status = 'pending' FOR UPDATE OF i`,
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
}

function toRow(r: Record<string, unknown>): InvitationRow {
  return {
    id: r['id'] as string,
    tenantId: r['tenant_id'] as string,
    tenantName: r['tenant_name'] as string,
    email: r['email'] as string,
    role: r['role'] as TenantRole,
    status: r['status'] as InvitationStatus,
    createdAt: r['created_at'] as Date,
    respondedAt: (r['responded_at'] as Date | null) ?? null,
  };
}
