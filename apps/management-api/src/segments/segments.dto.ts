import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { ArrayMaxSize, IsArray, IsOptional, IsString, Matches, MaxLength, MinLength } from 'class-validator';
import { FLAG_KEY_PATTERN } from '@flagship/domain';
import type { SegmentRule, SegmentTarget } from '@flagship/flag-evaluation';
import { SegmentRuleDto, SegmentTargetDto } from '../flags/flag-targeting.dto';
import { FlagWarningDto, KEY_MESSAGE } from '../flags/flags.dto';

/** The bounds of a segment body, in the OpenAPI description (issue 33: a hostile tenant cannot store a 10-million-key segment). */
export const SEGMENT_SIZE_DESCRIPTION =
  'A segment lives in one environment (X-Environment). Its definition (key, name, keys and rules, as evaluators hold it) may take at most SEGMENT_MAX_BYTES bytes (default 524288, 512 KiB), ' +
  'and it may list at most SEGMENT_MAX_KEYS context keys (default 10000: included, excluded, includedContexts and excludedContexts together); past either, 422 naming the field. ' +
  "A tenant may hold QUOTA_SEGMENTS_PER_TENANT segments (default 500, every environment's counted) taking QUOTA_SEGMENT_BYTES_PER_TENANT bytes (default 8388608); past them 409 quota-exceeded. " +
  'Nested fields are checked as LaunchDarkly defines them, unknown fields included: 422 with a path per problem.';

/** The fields a create and a PATCH share. */
class SegmentFieldsDto {
  @ApiPropertyOptional()
  @IsOptional()
  @IsString()
  @MaxLength(2000)
  description?: string;

  @ApiPropertyOptional({ type: [String], description: 'user keys always in the segment' })
  @IsOptional()
  @IsArray()
  included?: string[];

  @ApiPropertyOptional({ type: [String], description: 'user keys never in it (unless included)' })
  @IsOptional()
  @IsArray()
  excluded?: string[];

  @ApiPropertyOptional({ type: [SegmentTargetDto], description: 'keys of other context kinds always in the segment' })
  @IsOptional()
  @IsArray()
  includedContexts?: SegmentTarget[];

  @ApiPropertyOptional({ type: [SegmentTargetDto], description: 'keys of other context kinds never in it (unless included)' })
  @IsOptional()
  @IsArray()
  excludedContexts?: SegmentTarget[];

  @ApiPropertyOptional({ type: [SegmentRuleDto], description: 'a context not listed is in the segment when any rule matches it' })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(1000)
  rules?: SegmentRule[];
}

@ApiSchema({ description: SEGMENT_SIZE_DESCRIPTION })
export class CreateSegmentDto extends SegmentFieldsDto {
  @ApiProperty({ example: 'beta-customers', pattern: FLAG_KEY_PATTERN.source })
  @IsString()
  @Matches(FLAG_KEY_PATTERN, { message: KEY_MESSAGE })
  key: string;

  @ApiProperty({ example: 'Beta customers' })
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  name: string;

  @ApiPropertyOptional({ description: 'bucketing salt of the rules with a weight; default the segment key' })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  salt?: string;
}

/** PATCH: the fields sent replace the stored ones (a list is replaced whole); omitted ones stay. */
@ApiSchema({ description: SEGMENT_SIZE_DESCRIPTION })
export class UpdateSegmentDto extends SegmentFieldsDto {
  @ApiPropertyOptional()
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  name?: string;

  @ApiPropertyOptional({ nullable: true, type: String, description: 'null resets it to the segment key' })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  salt?: string | null;
}

export class SegmentDto {
  @ApiProperty() key: string;
  @ApiProperty() name: string;
  @ApiProperty() description: string;
  @ApiProperty({ description: 'the environment it lives in' }) environment: string;
  @ApiProperty({ type: [String] }) included: string[];
  @ApiProperty({ type: [String] }) excluded: string[];
  @ApiProperty({ type: [SegmentTargetDto] }) includedContexts: SegmentTarget[];
  @ApiProperty({ type: [SegmentTargetDto] }) excludedContexts: SegmentTarget[];
  @ApiProperty({ type: [SegmentRuleDto] }) rules: SegmentRule[];
  @ApiProperty({ nullable: true, type: String, description: 'null: the segment key' }) salt: string | null;
  @ApiProperty({ description: 'grows with every change; the ETag is it quoted' }) version: number;
  @ApiProperty() createdAt: string;
  @ApiProperty() updatedAt: string;
  @ApiProperty({ type: [FlagWarningDto], description: 'accepted data that can never match (clause values their operator cannot use, empty value lists), as LaunchDarkly evaluates them; empty when none' })
  warnings: FlagWarningDto[];
}

/** One change to a segment, as `GET /api/segments/{segmentKey}/audit` lists it. */
export class SegmentAuditEntryDto {
  @ApiProperty({ enum: ['create', 'update', 'delete'] }) action: string;
  @ApiProperty({ description: 'the caller: user:{id} or client:{clientId}' }) actor: string;
  @ApiProperty() environment: string;
  @ApiProperty({ type: 'object', additionalProperties: true, description: 'update: field -> {from, to}, only the fields sent; create: the fields sent; delete: empty' })
  changes: Record<string, unknown>;
  @ApiProperty() at: string;
}
