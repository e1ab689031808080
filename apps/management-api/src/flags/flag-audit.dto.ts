import { ApiProperty } from '@nestjs/swagger';

/** One change to a flag, as `GET /api/flags/{flagKey}/audit` lists it. */
export class FlagAuditEntryDto {
  @ApiProperty({ example: 'updated' }) action: string;
  @ApiProperty({ description: 'the caller: user:{id} or client:{clientId}' }) actor: string;
  @ApiProperty({ nullable: true, type: String, description: 'the environment changed; null for global fields' }) environment: string | null;
  @ApiProperty({ type: 'object', additionalProperties: true, description: 'field -> new value' }) changes: Record<string, unknown>;
  @ApiProperty() at: string;
}
