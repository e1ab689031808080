import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';

@Entity({ name: 'tenants' })
export class TenantEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ type: 'text' })
  name: string;

  @Column({ name: 'primary_email', type: 'text' })
  primaryEmail: string;

  @Column({ name: 'contact_name', type: 'text', default: '' })
  contactName: string;

  @Column({ name: 'is_sandbox', type: 'boolean', default: false })
  isSandbox: boolean;

  @Column({ name: 'sandbox_expires_at', type: 'timestamptz', nullable: true })
  sandboxExpiresAt: Date | null;

  @Column({ type: 'text', default: 'free' })
  plan: string;

  @Column({ name: 'subscription_status', type: 'text', default: 'active' })
  subscriptionStatus: string;

  /** Usage recorded with zero debit (CONTRACT.md section 7). */
  @Column({ name: 'zero_rated', type: 'boolean', default: false })
  zeroRated: boolean;

  @Column({ name: 'hosted_provider_allowed', type: 'boolean', default: false })
  hostedProviderAllowed: boolean;

  /** The user who created it (counted by the tenants-per-user quota); null when unknown or deleted. */
  @Column({ name: 'created_by', type: 'uuid', nullable: true })
  createdBy: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
