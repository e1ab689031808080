import type { PageCursor } from '@flagship/service-kit';
import type { OAuthClientEntity } from './oauth-client.entity';
import { OAuthClientsRepository } from './oauth-clients.repository';

/** In-memory twin of TypeOrmOAuthClientsRepository for service unit tests: same contract, no I/O. */
export class FakeOAuthClientsRepository extends OAuthClientsRepository {
  readonly rows = new Map<string, OAuthClientEntity>();

  async insert(client: OAuthClientEntity): Promise<void> {
    if (this.rows.has(client.clientId)) throw Object.assign(new Error('duplicate key'), { code: '23505' });
    this.rows.set(client.clientId, { ...client });
  }

  async findActive(tenantId: string, clientId: string): Promise<OAuthClientEntity | null> {
    const row = this.rows.get(clientId);
    return row && row.tenantId === tenantId && row.deletedAt === null ? { ...row } : null;
  }

  async list(tenantId: string, limit: number, after?: PageCursor): Promise<OAuthClientEntity[]> {
    const key = (r: { createdAt: Date; clientId: string }) => [r.createdAt.getTime(), r.clientId] as const;
    const cmp = (a: readonly [number, string], b: readonly [number, string]) => (a[0] - b[0]) || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0);
    const start = after ? ([new Date(after.at).getTime(), after.id] as const) : undefined;
    return [...this.rows.values()]
      .filter((r) => r.tenantId === tenantId && r.deletedAt === null && (!start || cmp(key(r), start) > 0))
      .sort((a, b) => cmp(key(a), key(b)))
      .slice(0, limit + 1)
      .map((r) => ({ ...r }));
  }

  async replaceSecret(tenantId: string, clientId: string, secretHash: string, at: Date): Promise<OAuthClientEntity | null> {
    const row = await this.findActive(tenantId, clientId);
    if (!row) return null;
    this.rows.set(clientId, { ...row, secretHash, secretRotatedAt: at });
    return { ...row, secretHash, secretRotatedAt: at };
  }

  async markDeleted(tenantId: string, clientId: string, at: Date): Promise<boolean> {
    const row = await this.findActive(tenantId, clientId);
    if (!row) return false;
    this.rows.set(clientId, { ...row, deletedAt: at });
    return true;
  }

  async findActiveByClientId(clientId: string): Promise<OAuthClientEntity | null> {
    const row = this.rows.get(clientId);
    return row && row.deletedAt === null ? { ...row } : null;
  }
}
