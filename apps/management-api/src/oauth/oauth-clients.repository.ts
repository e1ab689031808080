import { Inject, Injectable } from '@nestjs/common';
import { isUuid } from '@flagship/domain';
import { type DataSource, type EntityManager, IsNull } from 'typeorm';
import { DATA_SOURCE } from '@flagship/persistence';
import type { PageCursor } from '@flagship/service-kit';
import { OAuthClientEntity } from './oauth-client.entity';

/**
 * Storage of OAuth clients. Every method of this tenant-owned table takes the tenant id first and
 * filters on it, except `findActiveByClientId`, kept for the token endpoint. Deleted clients are
 * kept (deleted_at set) as the revocation fallback, and are invisible to every other method.
 */
export abstract class OAuthClientsRepository {
  /** `m`: inside that transaction (a quota's). */
  abstract insert(client: OAuthClientEntity, m?: EntityManager): Promise<void>;
  abstract findActive(tenantId: string, clientId: string): Promise<OAuthClientEntity | null>;
  /** Up to `limit + 1` clients in (created_at, client_id) order after `after`: one more tells a next page exists. */
  abstract list(tenantId: string, limit: number, after?: PageCursor): Promise<OAuthClientEntity[]>;
  abstract replaceSecret(tenantId: string, clientId: string, secretHash: string, at: Date): Promise<OAuthClientEntity | null>;
  abstract markDeleted(tenantId: string, clientId: string, at: Date): Promise<boolean>;
  /**
   * The token endpoint's lookup: by client id alone, since the caller has no tenant yet (its token
   * will name the client's). Safe because client ids are globally unique (the primary key).
   */
  abstract findActiveByClientId(clientId: string): Promise<OAuthClientEntity | null>;
}

/** Ids we issue are short; anything else names no client and need not reach Postgres. */
const CLIENT_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** The shape of every client id this API issues (anything else names no client). */
export const isClientId = (id: string): boolean => CLIENT_ID.test(id);

@Injectable()
export class TypeOrmOAuthClientsRepository extends OAuthClientsRepository {
  constructor(@Inject(DATA_SOURCE) private readonly ds: DataSource) {
    super();
  }

  private get repo() {
    return this.ds.getRepository(OAuthClientEntity);
  }

  async insert(client: OAuthClientEntity, m?: EntityManager): Promise<void> {
    await (m ?? this.ds.manager).getRepository(OAuthClientEntity).insert(client);
  }

  findActive(tenantId: string, clientId: string): Promise<OAuthClientEntity | null> {
    if (!isUuid(tenantId) || !CLIENT_ID.test(clientId)) return Promise.resolve(null);
    return this.repo.findOneBy({ tenantId, clientId, deletedAt: IsNull() });
  }

  list(tenantId: string, limit: number, after?: PageCursor): Promise<OAuthClientEntity[]> {
    if (!isUuid(tenantId)) return Promise.resolve([]);
    const q = this.repo
      .createQueryBuilder('c')
      .where('c.tenant_id = :tenantId AND c.deleted_at IS NULL', { tenantId })
      .orderBy('c.created_at', 'ASC')
      // Byte order ("C") on every server, whatever the database's collation: pages and tests agree.
      .addOrderBy('c.client_id COLLATE "C"', 'ASC')
      .limit(limit + 1);
    if (after) q.andWhere('(c.created_at, c.client_id COLLATE "C") > (CAST(:at AS timestamptz), :id)', { at: after.at, id: after.id });
    return q.getMany();
  }

  async replaceSecret(tenantId: string, clientId: string, secretHash: string, at: Date): Promise<OAuthClientEntity | null> {
    if (!isUuid(tenantId) || !CLIENT_ID.test(clientId)) return null;
    const result = await this.repo.update({ tenantId, clientId, deletedAt: IsNull() }, { secretHash, secretRotatedAt: at });
    return result.affected ? this.findActive(tenantId, clientId) : null;
  }

  async markDeleted(tenantId: string, clientId: string, at: Date): Promise<boolean> {
    if (!isUuid(tenantId) || !CLIENT_ID.test(clientId)) return false;
    const result = await this.repo.update({ tenantId, clientId, deletedAt: IsNull() }, { deletedAt: at });
    return (result.affected ?? 0) > 0;
  }

  findActiveByClientId(clientId: string): Promise<OAuthClientEntity | null> {
    if (!CLIENT_ID.test(clientId)) return Promise.resolve(null);
    return this.repo.findOneBy({ clientId, deletedAt: IsNull() });
  }
}
