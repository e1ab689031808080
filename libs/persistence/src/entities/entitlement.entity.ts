import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';

/** A tenant's gateway entitlement for one product (CONTRACT.md section 7). */
@Entity({ name: 'entitlements' })
export class EntitlementEntity {
  @PrimaryColumn({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @PrimaryColumn({ name: 'product_key', type: 'text' })
  productKey: string;

  @Column({ type: 'text' })
  tier: 'enterprise' | 'enterprise_plus_suite';

  @Column({ name: 'valid_until', type: 'timestamptz', nullable: true })
  validUntil: Date | null;

  @Column({ type: 'text', default: 'admin' })
  source: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
