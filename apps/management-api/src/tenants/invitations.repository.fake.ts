import { randomUUID } from 'node:crypto';
import type { Tx } from '@flagship/persistence';
import type { TenantRole } from '@flagship/domain';
import { type InvitationRow, InvitationsRepository, type InvitationStatus } from './invitations.repository';

interface FakeMember {
  tenantId: string;
  userId: string;
  email: string;
  role: TenantRole;
}

/**
 * In-memory twin of SqlInvitationsRepository for service unit tests: same contract, no I/O. It
 * holds the tenants' names and members the real one reads from their tables, and a clock (`now`,
 * ms) a test moves on. `calls` records each method called, in order, with which arguments.
 */
export class FakeInvitationsRepository extends InvitationsRepository {
  readonly rows = new Map<string, InvitationRow>();
  readonly tenantNames = new Map<string, string>();
  readonly members: FakeMember[] = [];
  /** Users' e-mails by id (the users table), for memberships made by joinTenant. */
  readonly emails = new Map<string, string>();
  readonly calls: Array<{ method: string; args: unknown[] }> = [];
  now = Date.parse('2026-01-01T00:00:00Z');

  private record(method: string, ...args: unknown[]): void {
    this.calls.push({ method, args });
  }

  private live(r: InvitationRow): boolean {
    return r.status === 'pending' && r.expiresAt.getTime() > this.now;
  }

  private copy(r: InvitationRow): InvitationRow {
    return { ...r, tenantName: this.tenantNames.get(r.tenantId) ?? '' };
  }

  async isMemberByEmail(_m: Tx, tenantId: string, email: string): Promise<boolean> {
    this.record('isMemberByEmail', tenantId, email);
    return this.members.some((ms) => ms.tenantId === tenantId && ms.email.toLowerCase() === email.toLowerCase());
  }

  async lockRole(_m: Tx, tenantId: string, userId: string): Promise<TenantRole | null> {
    this.record('lockRole', tenantId, userId);
    return this.members.find((ms) => ms.tenantId === tenantId && ms.userId === userId)?.role ?? null;
  }

  async purgeExpired(_m: Tx, tenantId: string): Promise<void> {
    this.record('purgeExpired', tenantId);
    for (const [id, r] of this.rows) if (r.tenantId === tenantId && r.status === 'pending' && !this.live(r)) this.rows.delete(id);
  }

  async hasPending(_m: Tx, tenantId: string, email: string): Promise<boolean> {
    this.record('hasPending', tenantId, email);
    return [...this.rows.values()].some((r) => r.tenantId === tenantId && r.email.toLowerCase() === email.toLowerCase() && this.live(r));
  }

  async upsertPending(_m: Tx, tenantId: string, email: string, role: TenantRole, invitedBy: string | null, ttlMs: number): Promise<InvitationRow> {
    this.record('upsertPending', tenantId, email, role, invitedBy, ttlMs);
    const expiresAt = new Date(this.now + ttlMs);
    const existing = [...this.rows.values()].find((r) => r.tenantId === tenantId && r.status === 'pending' && r.email.toLowerCase() === email.toLowerCase());
    const row: InvitationRow = existing
      ? { ...existing, role, invitedBy, expiresAt }
      : { id: randomUUID(), tenantId, tenantName: '', email, role, status: 'pending', invitedBy, createdAt: new Date(this.now), expiresAt, respondedAt: null };
    this.rows.set(row.id, row);
    return this.copy(row);
  }

  async pendingOfTenant(tenantId: string): Promise<InvitationRow[]> {
    this.record('pendingOfTenant', tenantId);
    return this.sorted((r) => r.tenantId === tenantId && this.live(r));
  }

  async deletePending(tenantId: string, invitationId: string): Promise<boolean> {
    this.record('deletePending', tenantId, invitationId);
    const r = this.rows.get(invitationId);
    if (!r || r.tenantId !== tenantId || !this.live(r)) return false;
    this.rows.delete(invitationId);
    return true;
  }

  async deletePendingInvitedBy(_m: Tx, tenantId: string, userId: string): Promise<number> {
    this.record('deletePendingInvitedBy', tenantId, userId);
    let n = 0;
    for (const [id, r] of this.rows) {
      if (r.tenantId === tenantId && r.invitedBy === userId && r.status === 'pending') {
        this.rows.delete(id);
        n++;
      }
    }
    return n;
  }

  async pendingForEmail(email: string): Promise<InvitationRow[]> {
    this.record('pendingForEmail', email);
    return this.sorted((r) => r.email.toLowerCase() === email.toLowerCase() && this.live(r));
  }

  async lockPendingForEmail(_m: Tx, invitationId: string, email: string): Promise<InvitationRow | null> {
    this.record('lockPendingForEmail', invitationId, email);
    const r = this.rows.get(invitationId);
    return r && r.email.toLowerCase() === email.toLowerCase() && this.live(r) ? this.copy(r) : null;
  }

  async respond(_m: Tx, tenantId: string, invitationId: string, status: Exclude<InvitationStatus, 'pending'>): Promise<Date> {
    this.record('respond', tenantId, invitationId, status);
    const r = this.rows.get(invitationId);
    if (!r || r.tenantId !== tenantId) throw new Error(`no invitation ${invitationId} in ${tenantId}`);
    const respondedAt = new Date(this.now);
    this.rows.set(invitationId, { ...r, status, respondedAt });
    return respondedAt;
  }

  async joinTenant(_m: Tx, tenantId: string, userId: string, role: TenantRole): Promise<boolean> {
    this.record('joinTenant', tenantId, userId, role);
    if (this.members.some((ms) => ms.tenantId === tenantId && ms.userId === userId)) return false;
    this.members.push({ tenantId, userId, email: this.emails.get(userId) ?? '', role });
    return true;
  }

  /** Pending and unexpired invitations of the tenant (what the pending-invitations quota counts). */
  countPending(tenantId: string): number {
    return [...this.rows.values()].filter((r) => r.tenantId === tenantId && this.live(r)).length;
  }

  private sorted(match: (r: InvitationRow) => boolean): InvitationRow[] {
    return [...this.rows.values()]
      .filter(match)
      .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : 1))
      .map((r) => this.copy(r));
  }
}
