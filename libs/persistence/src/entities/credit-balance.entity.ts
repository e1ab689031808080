import { Column, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';

/** Micro-credits of a tenant; `reserved` is held by gateway requests in flight. */
@Entity({ name: 'credit_balances' })
export class CreditBalanceEntity {
  @PrimaryColumn({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  /** bigint arrives from pg as a string; kept as one to lose no precision. */
  @Column({ type: 'bigint', default: 0 })
  balance: string;

  @Column({ type: 'bigint', default: 0 })
  reserved: string;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
