import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';
import type { TenantRole } from '@flagship/domain';

@Entity({ name: 'memberships' })
export class MembershipEntity {
  @PrimaryColumn({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @PrimaryColumn({ name: 'user_id', type: 'uuid' })
  userId: string;

  @Column({ type: 'text' })
  role: TenantRole;

  @Column({ name: 'last_accessed_at', type: 'timestamptz', nullable: true })
  lastAccessedAt: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
