import { Column, Entity, PrimaryColumn } from 'typeorm';

/** An OAuth client of a tenant (`oauth_clients`). Its secret exists only as a slow hash. */
@Entity({ name: 'oauth_clients' })
export class OAuthClientEntity {
  @Column({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  /** Globally unique (`ffc_` + 22 base62 characters). */
  @PrimaryColumn({ name: 'client_id', type: 'text' })
  clientId: string;

  @Column({ type: 'text' })
  name: string;

  /** `scrypt$N$r$p$salt$hash`. */
  @Column({ name: 'secret_hash', type: 'text' })
  secretHash: string;

  @Column({ type: 'text', array: true, default: () => "'{}'" })
  scopes: string[];

  /** The allow-list of product keys (CONTRACT.md section 7): an internal one makes the client internal. */
  @Column({ name: 'product_keys', type: 'text', array: true, default: () => "'{}'" })
  productKeys: string[];

  @Column({ name: 'created_by', type: 'uuid', nullable: true })
  createdBy: string | null;

  /** Set by the service, at millisecond precision, so keyset cursors compare exactly. */
  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'secret_rotated_at', type: 'timestamptz', nullable: true })
  secretRotatedAt: Date | null;

  @Column({ name: 'deleted_at', type: 'timestamptz', nullable: true })
  deletedAt: Date | null;
}
