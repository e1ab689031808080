import { Inject, Injectable } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { DATA_SOURCE } from '@flagship/persistence';
import { DevIdpAccountEntity, DevIdpKeyEntity } from './dev-idp.entity';

@Injectable()
export class DevIdpRepository {
  constructor(@Inject(DATA_SOURCE) private readonly ds: DataSource) {}

  findAccountByEmail(email: string): Promise<DevIdpAccountEntity | null> {
    return this.ds.getRepository(DevIdpAccountEntity).createQueryBuilder('a').where('lower(a.email) = lower(:email)', { email }).getOne();
  }

  /** Inserts unless the e-mail is taken; returns whether it was inserted. */
  async insertAccount(account: Omit<DevIdpAccountEntity, 'createdAt'>): Promise<boolean> {
    const rows: unknown[] = await this.ds.query(
      `INSERT INTO dev_idp_accounts (uid, email, password_hash, display_name, email_verified) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT DO NOTHING RETURNING uid`,
      [account.uid, account.email, account.passwordHash, account.displayName, account.emailVerified],
    );
    return rows.length === 1;
  }

  findKey(): Promise<DevIdpKeyEntity | null> {
    return this.ds.getRepository(DevIdpKeyEntity).findOne({ where: {}, order: { createdAt: 'ASC' } });
  }

  /** The first process to start stores its key; the others read that one (fixed kid). */
  async insertKeyIfAbsent(key: Omit<DevIdpKeyEntity, 'createdAt'>): Promise<void> {
    await this.ds.query(
      `INSERT INTO dev_idp_keys (kid, public_jwk, private_jwk) VALUES ($1, $2, $3) ON CONFLICT (kid) DO NOTHING`,
      [key.kid, key.publicJwk, key.privateJwk],
    );
  }
}
