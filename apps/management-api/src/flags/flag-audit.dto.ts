import { ApiProperty } from '@nestjs/swagger';

/** `change-request` and `schedule` record a step of one (its id and the state it reached); the write itself is an `update` as its author. */
export const FLAG_AUDIT_ACTIONS = ['create', 'update', 'import', 'delete', 'change-request', 'schedule'] as const;

/** One change to a flag, as `GET /api/flags/{flagKey}/audit` lists it. */
export class FlagAuditEntryDto {
  @ApiProperty({ enum: FLAG_AUDIT_ACTIONS }) action: string;
  @ApiProperty({ description: 'the caller: user:{id} or client:{clientId}' }) actor: string;
  @ApiProperty({ nullable: true, type: String, description: 'the environment changed; null for global fields' }) environment: string | null;
  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    description:
      'update: field -> {from, to}, only the fields the request changed; create: the fields sent; import: the imported variations and targeting; delete: empty; change-request and schedule: {id, state} of the step (a failed schedule adds its reason)',
  })
  changes: Record<string, unknown>;
  @ApiProperty() at: string;
}
