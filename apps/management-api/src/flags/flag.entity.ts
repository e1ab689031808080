import { Column, CreateDateColumn, Entity, PrimaryColumn, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';
import type { FlagType, JsonValue } from '@flagship/domain';
import type { ClientSideAvailability, Prerequisite, Rule, Target, Variation } from '@flagship/flag-evaluation';

/** A flag's global fields (the same in every environment). */
@Entity({ name: 'flags' })
export class FlagEntity {
  @Column({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ type: 'text' })
  key: string;

  @Column({ name: 'project_id', type: 'uuid', nullable: true })
  projectId: string | null;

  @Column({ type: 'text' })
  name: string;

  @Column({ type: 'text' })
  type: FlagType;

  @Column({ name: 'default_value', type: 'jsonb' })
  defaultValue: JsonValue;

  @Column({ type: 'text', default: '' })
  description: string;

  @Column({ type: 'text', array: true, default: '{}' })
  tags: string[];

  @Column({ type: 'jsonb', default: [] })
  variations: Variation[];

  /** Which orep-server client-side keys may evaluate it, in every environment (as LaunchDarkly keeps it). */
  @Column({ name: 'client_side_availability', type: 'jsonb' })
  clientSideAvailability: ClientSideAvailability;

  @Column({ type: 'integer', default: 1 })
  version: number;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}

/** A flag's targeting in one environment. */
@Entity({ name: 'flag_environments' })
export class FlagEnvironmentEntity {
  @Column({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @PrimaryColumn({ name: 'flag_id', type: 'uuid' })
  flagId: string;

  @PrimaryColumn({ name: 'environment_key', type: 'text' })
  environmentKey: string;

  @Column({ type: 'boolean', default: false })
  enabled: boolean;

  /** NULL: the type's default off value (false for booleans, else defaultValue). */
  @Column({ name: 'off_value', type: 'jsonb', nullable: true })
  offValue: JsonValue | null;

  @Column({ type: 'jsonb', default: [] })
  targets: Target[];

  @Column({ type: 'jsonb', default: [] })
  rules: Rule[];

  @Column({ type: 'jsonb', default: [] })
  prerequisites: Prerequisite[];

  @Column({ type: 'text', nullable: true })
  salt: string | null;

  @Column({ type: 'integer', default: 1 })
  version: number;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;

  /** Since when the definition has served one value to everyone (null: it serves several); kept by every write (measureFlagDefinitions). */
  @Column({ name: 'serving_one_variation_since', type: 'timestamptz', nullable: true, insert: false, update: false })
  servingOneVariationSince?: Date | null;
}

@Entity({ name: 'flag_audit' })
export class FlagAuditEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id: string;

  @Column({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @Column({ name: 'flag_key', type: 'text' })
  flagKey: string;

  @Column({ name: 'environment_key', type: 'text', nullable: true })
  environmentKey: string | null;

  @Column({ type: 'text' })
  action: string;

  @Column({ type: 'text' })
  actor: string;

  @Column({ type: 'jsonb', default: {} })
  changes: Record<string, unknown>;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
