import { Inject, Injectable } from '@nestjs/common';
import type { DataSource, EntityManager } from 'typeorm';
import { DATA_SOURCE } from '@flagship/persistence';
import type { PageCursor } from '@flagship/service-kit';
import { UserEntity } from './user.entity';

/** Users are global (one person, many tenants); tenant-scoped reads go through memberships. */
@Injectable()
export class UsersRepository {
  constructor(@Inject(DATA_SOURCE) private readonly ds: DataSource) {}

  private repo(m?: EntityManager) {
    return (m ?? this.ds.manager).getRepository(UserEntity);
  }

  findById(id: string): Promise<UserEntity | null> {
    return this.repo().findOneBy({ id });
  }

  /** On every authenticated request: plain SQL, not the query builder, whose per-call cost showed in the evaluate benchmark. */
  async findBySubject(subject: string): Promise<UserEntity | null> {
    const rows: Array<Record<string, unknown>> = await this.ds.query(
      `SELECT id, idp_subject, email, display_name, sign_in_provider, last_accessed_at, created_at, updated_at FROM users WHERE idp_subject = $1`,
      [subject],
    );
    return rows.length ? toUser(rows[0]) : null;
  }

  findByEmail(email: string, m?: EntityManager): Promise<UserEntity | null> {
    return this.repo(m).createQueryBuilder('u').where('lower(u.email) = lower(:email)', { email }).getOne();
  }

  create(m: EntityManager, user: Pick<UserEntity, 'idpSubject' | 'email' | 'displayName' | 'signInProvider'>): Promise<UserEntity> {
    return this.repo(m).save(this.repo(m).create({ ...user, lastAccessedAt: new Date() }));
  }

  async touch(id: string, provider?: string | null): Promise<void> {
    await this.repo().update({ id }, { lastAccessedAt: new Date(), ...(provider ? { signInProvider: provider } : {}) });
  }

  /** Platform admin listing, keyset-paginated by (created_at, id). */
  list(limit: number, after?: PageCursor): Promise<UserEntity[]> {
    const q = this.repo().createQueryBuilder('u').orderBy('u.created_at', 'ASC').addOrderBy('u.id', 'ASC').limit(limit + 1);
    if (after) q.where('(u.created_at, u.id) > (:at, :id)', { at: after.at, id: after.id });
    return q.getMany();
  }
}

function toUser(r: Record<string, unknown>): UserEntity {
  return Object.assign(new UserEntity(), {
    id: r['id'] as string,
    idpSubject: r['idp_subject'] as string,
    email: r['email'] as string,
    displayName: r['display_name'] as string,
    signInProvider: (r['sign_in_provider'] as string | null) ?? null,
    lastAccessedAt: (r['last_accessed_at'] as Date | null) ?? null,
    createdAt: r['created_at'] as Date,
    updatedAt: r['updated_at'] as Date,
  });
}
