import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

@Entity({ name: 'dev_idp_accounts' })
export class DevIdpAccountEntity {
  @PrimaryColumn({ type: 'text' })
  uid: string;

  @Column({ type: 'text' })
  email: string;

  /** NULL for accounts that only ever signed in through a federated provider. */
  @Column({ name: 'password_hash', type: 'text', nullable: true })
  passwordHash: string | null;

  @Column({ name: 'display_name', type: 'text', default: '' })
  displayName: string;

  /** The token's `email_verified`: false lets tests act as a provider that does not check e-mails. */
  @Column({ name: 'email_verified', type: 'boolean', default: true })
  emailVerified: boolean;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}

@Entity({ name: 'dev_idp_keys' })
export class DevIdpKeyEntity {
  @PrimaryColumn({ type: 'text' })
  kid: string;

  @Column({ name: 'public_jwk', type: 'jsonb' })
  publicJwk: Record<string, unknown>;

  @Column({ name: 'private_jwk', type: 'jsonb' })
  privateJwk: Record<string, unknown>;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
