import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsDefined, IsISO8601, IsObject, IsOptional, IsString, MaxLength, MinLength, ValidateNested } from 'class-validator';
import { UpdateFlagDto } from '../flags/flags.dto';
import { CHANGE_REQUEST_STATES, SCHEDULED_CHANGE_STATES } from './flag-changes.repository';

const PATCH_DESCRIPTION = 'a PATCH /api/flags/{flagKey} body, written in the request\'s environment (X-Environment)';

/** The body both a change request and a schedule carry: a PATCH body, validated as PATCH validates it. */
class PatchCarrierDto {
  @ApiProperty({ type: UpdateFlagDto, description: PATCH_DESCRIPTION })
  @IsDefined()
  @IsObject()
  @ValidateNested()
  @Type(() => UpdateFlagDto)
  patch: UpdateFlagDto;
}

export class CreateChangeRequestDto extends PatchCarrierDto {
  @ApiPropertyOptional({ maxLength: 2000 })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(2000)
  comment?: string;

  @ApiPropertyOptional({ format: 'date-time', description: 'when set, applying the approved request schedules the change for then (a scheduled change approved by its approver)' })
  @IsOptional()
  @IsISO8601({ strict: true }, { message: 'must be an ISO 8601 timestamp' })
  executeAt?: string;
}

export class CreateScheduledChangeDto extends PatchCarrierDto {
  @ApiProperty({ format: 'date-time', description: 'in the future, at most 366 days ahead' })
  @IsISO8601({ strict: true }, { message: 'must be an ISO 8601 timestamp' })
  executeAt: string;
}

export class ChangeCommentDto {
  @ApiProperty({ maxLength: 2000 })
  @IsString()
  @MinLength(1)
  @MaxLength(2000)
  comment: string;
}

export class ChangeDecisionDto {
  @ApiPropertyOptional({ maxLength: 2000, description: 'added to the request\'s comments' })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(2000)
  comment?: string;
}

export class ChangeCommentEntryDto {
  @ApiProperty({ description: 'user:{id} or client:{clientId}' }) author: string;
  @ApiProperty() body: string;
  @ApiProperty({ format: 'date-time' }) at: string;
}

/** What a change request and a scheduled change both are: a PATCH body for one flag in one environment, by its author. */
class FlagChangeDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty() flagKey: string;
  @ApiProperty() environment: string;
  @ApiProperty({ type: 'object', additionalProperties: true, description: 'the PATCH body, as sent' }) patch: Record<string, unknown>;
  @ApiProperty({ description: 'user:{id} or client:{clientId}; the change is written and audited as them' }) author: string;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
}

export class ChangeRequestDto extends FlagChangeDto {
  @ApiProperty({ description: "the flag's ETag the request was made against; it applies only while the flag is still at it" }) baseVersion: string;
  @ApiProperty({ nullable: true, type: String, format: 'date-time' }) executeAt: string | null;
  @ApiProperty({ enum: CHANGE_REQUEST_STATES, description: 'pending -> approved -> applied; rejected; stale once the flag moved on' }) state: string;
  @ApiProperty({ type: [ChangeCommentEntryDto] }) comments: ChangeCommentEntryDto[];
  @ApiProperty({ nullable: true, type: String, description: 'who approved or rejected it' }) decidedBy: string | null;
  @ApiProperty({ nullable: true, type: String, format: 'date-time' }) decidedAt: string | null;
  @ApiProperty({ nullable: true, type: String }) appliedBy: string | null;
  @ApiProperty({ nullable: true, type: String, format: 'date-time' }) appliedAt: string | null;
}

export class ScheduledChangeDto extends FlagChangeDto {
  @ApiProperty({ format: 'date-time' }) executeAt: string;
  @ApiProperty({ nullable: true, type: String, description: 'who approved it, when it came from a change request' }) approvedBy: string | null;
  @ApiProperty({ enum: SCHEDULED_CHANGE_STATES }) state: string;
  @ApiProperty({ nullable: true, type: String, description: 'why it failed: a field changed since it was scheduled (conflict), the flag is gone, or its rules refuse the patch now' })
  reason: string | null;
  @ApiProperty({ nullable: true, type: String, format: 'date-time' }) finishedAt: string | null;
}
