import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

@Entity({ name: 'environments' })
export class EnvironmentEntity {
  @PrimaryColumn({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @PrimaryColumn({ type: 'text' })
  key: string;

  @Column({ type: 'text' })
  name: string;

  /** A direct change to a flag's settings here is refused: it goes through a change request. */
  @Column({ name: 'require_approval', type: 'boolean', default: false })
  requireApproval: boolean;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
