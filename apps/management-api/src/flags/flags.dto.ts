import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  Allow,
  ArrayMaxSize,
  IsArray,
  IsBoolean,
  IsDefined,
  IsIn,
  IsInt,
  IsNumber,
  IsObject,
  IsOptional,
  IsString,
  IsUUID,
  Matches,
  Max,
  MaxLength,
  Min,
  MinLength,
  ValidateNested,
} from 'class-validator';
import { JSON_VALUE, PageQueryDto } from '@flagship/service-kit';
import { EVALUATION_ERROR_KINDS, EVALUATION_REASONS, FLAG_KEY_PATTERN, FLAG_TYPES, type EvaluationErrorKind, type EvaluationReason, type FlagType, type JsonValue } from '@flagship/domain';
import type { Prerequisite, Rule, Target, Variation } from '@flagship/flag-evaluation';
import { CLIENT_SIDE_AVAILABILITY_DESCRIPTION, ClientSideAvailabilityDto, PrerequisiteDto, RuleDto, TargetDto, VariationDto } from './flag-targeting.dto';
import { FLAG_LIFECYCLES, type FlagLifecycle } from './flag-lifecycle';

export const KEY_MESSAGE = 'must start with a letter or digit and hold at most 128 letters, digits, dots, dashes or underscores';

/**
 * Any JSON value or null, the null declared on the property (so the API's null check lets it
 * through) and taken out of the branches (so no two parts of the schema both claim a null).
 */
const NULLABLE_JSON_VALUE = {
  oneOf: JSON_VALUE.oneOf.map((branch) => {
    const { nullable: _null, ...rest } = branch as typeof branch & { nullable?: boolean };
    return rest;
  }),
  nullable: true,
};

/** A variation as sent when creating a flag (seed: `flag_variations`). */
export class FlagVariationInputDto {
  @ApiProperty({ example: 'on' })
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  name: string;

  @ApiProperty({ ...JSON_VALUE, description: 'any JSON value matching the flag type' })
  @Allow()
  value: JsonValue;

  @ApiPropertyOptional()
  @IsOptional()
  @IsString()
  @MaxLength(2000)
  description?: string;

  @ApiPropertyOptional({ description: 'relative weight in the fallthrough rollout', default: 0 })
  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(0)
  weight?: number;
}

/** The size bounds of a flag body, in the OpenAPI description (CONTRACT.md section 5). */
export const FLAG_SIZE_DESCRIPTION =
  "A flag's definition in one environment (its JSON as evaluators hold it: key, type, default value, variations and that environment's targeting; not its name, description or tags) " +
  'may take at most FLAG_MAX_BYTES bytes (default 32768, 32 KiB); a write that makes it larger is 422 naming the field. ' +
  "A tenant's definitions together, each environment's counted, may take QUOTA_FLAG_BYTES_PER_TENANT bytes (default 8388608, 8 MiB); past it 409 quota-exceeded (quota flag-bytes-per-tenant).";

@ApiSchema({ description: FLAG_SIZE_DESCRIPTION })
export class CreateFlagDto {
  @ApiProperty({ example: 'new-checkout', pattern: FLAG_KEY_PATTERN.source })
  @IsString()
  @Matches(FLAG_KEY_PATTERN, { message: KEY_MESSAGE })
  key: string;

  @ApiProperty({ example: 'New checkout' })
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  name: string;

  @ApiProperty({ enum: FLAG_TYPES })
  @IsIn(FLAG_TYPES as unknown as string[], { message: `must be one of ${FLAG_TYPES.join(', ')}` })
  type: FlagType;

  @ApiProperty({ ...JSON_VALUE, description: 'matches type: boolean, string, number or a JSON object/array' })
  @IsDefined({ message: 'is required' })
  defaultValue: JsonValue;

  @ApiPropertyOptional()
  @IsOptional()
  @IsString()
  @MaxLength(2000)
  description?: string;

  @ApiPropertyOptional({ type: [String] })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(50)
  @IsString({ each: true })
  @MaxLength(64, { each: true })
  tags?: string[];

  @ApiPropertyOptional({ description: 'switch the flag on in the request\'s environment (default off everywhere)' })
  @IsOptional()
  @IsBoolean()
  enabled?: boolean;

  @ApiPropertyOptional()
  @IsOptional()
  @IsUUID('all', { message: 'must be a project id' })
  projectId?: string;

  @ApiPropertyOptional({ type: [FlagVariationInputDto] })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(100)
  @ValidateNested({ each: true })
  @Type(() => FlagVariationInputDto)
  flag_variations?: FlagVariationInputDto[];

  @ApiPropertyOptional({ type: ClientSideAvailabilityDto, description: CLIENT_SIDE_AVAILABILITY_DESCRIPTION })
  @IsOptional()
  @ValidateNested()
  @Type(() => ClientSideAvailabilityDto)
  clientSideAvailability?: ClientSideAvailabilityDto;
}

/** The project-scoped create: the project comes from the path. */
@ApiSchema({ description: FLAG_SIZE_DESCRIPTION })
export class CreateProjectFlagDto extends CreateFlagDto {}

/**
 * PATCH: global fields and, for the request's environment, targeting. Omitted fields stay; the
 * nested rule model is checked by the evaluator's validator (422 with a path per problem).
 */
@ApiSchema({ description: FLAG_SIZE_DESCRIPTION })
export class UpdateFlagDto {
  @ApiPropertyOptional()
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  name?: string;

  @ApiPropertyOptional()
  @IsOptional()
  @IsString()
  @MaxLength(2000)
  description?: string;

  @ApiPropertyOptional(JSON_VALUE)
  @Allow()
  defaultValue?: JsonValue;

  @ApiPropertyOptional({ type: [String] })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(50)
  @IsString({ each: true })
  @MaxLength(64, { each: true })
  tags?: string[];

  @ApiPropertyOptional({ nullable: true, type: String })
  @IsOptional()
  @IsUUID('all', { message: 'must be a project id' })
  projectId?: string | null;

  @ApiPropertyOptional({ type: [VariationDto], description: 'the full list of variations, ids included' })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(100)
  variations?: Variation[];

  @ApiPropertyOptional({ type: ClientSideAvailabilityDto, description: CLIENT_SIDE_AVAILABILITY_DESCRIPTION })
  @IsOptional()
  @ValidateNested()
  @Type(() => ClientSideAvailabilityDto)
  clientSideAvailability?: ClientSideAvailabilityDto;

  @ApiPropertyOptional()
  @IsOptional()
  @IsBoolean()
  enabled?: boolean;

  @ApiPropertyOptional({ ...NULLABLE_JSON_VALUE, description: 'served when off; null resets to the type default' })
  @Allow()
  offValue?: JsonValue | null;

  @ApiPropertyOptional({ type: [TargetDto] })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(100)
  targets?: Target[];

  @ApiPropertyOptional({ type: [RuleDto] })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(1000)
  rules?: Rule[];

  @ApiPropertyOptional({ type: [PrerequisiteDto] })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(50)
  prerequisites?: Prerequisite[];

  @ApiPropertyOptional({ nullable: true, type: String })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  salt?: string | null;
}

export class ListFlagsQueryDto extends PageQueryDto {
  @ApiPropertyOptional({ description: 'only the flags of this project' })
  @IsOptional()
  @IsUUID('all', { message: 'must be a project id' })
  projectId?: string;

  @ApiPropertyOptional({
    enum: FLAG_LIFECYCLES,
    description:
      'stale: flags not evaluated in this environment (X-Environment) for staleAfterDays days (a younger flag counts from its creation), or serving one value to everyone for that long; active: the others',
  })
  @IsOptional()
  @IsIn(FLAG_LIFECYCLES)
  lifecycle?: FlagLifecycle;

  @ApiPropertyOptional({ minimum: 1, maximum: 365, description: 'days for lifecycle; default STALE_AFTER_DAYS (30)' })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(365)
  staleAfterDays?: number;
}

export class EvaluateFlagDto {
  @ApiPropertyOptional({ description: 'the context key; without it the result is ERROR / USER_NOT_SPECIFIED' })
  @IsOptional()
  @IsString()
  @MaxLength(512)
  userId?: string;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: JSON_VALUE,
    description: "attributes rules match on; with userId they make a `user` context (an attribute `kind` does not change the kind: it is LaunchDarkly's built-in)",
    example: { country: 'NO', plan: 'pro' },
  })
  @IsOptional()
  @IsObject()
  attributes?: Record<string, JsonValue>;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: JSON_VALUE,
    description:
      'a LaunchDarkly context instead of userId and attributes (not with them): `{kind?, key, ...attributes}` (no kind: `user`) or ' +
      '`{kind: "multi", <kind>: {key, ...attributes}, ...}`. A malformed one (an invalid kind, `multi` inside multi, a missing key) is a 400 `invalid-context` naming the field.',
    example: { kind: 'multi', user: { key: 'user-42', country: 'NO' }, organization: { key: 'acme', plan: 'enterprise' } },
  })
  @IsOptional()
  @IsObject()
  context?: Record<string, JsonValue>;

  @ApiPropertyOptional({ description: 'environment key; default X-Environment, then production' })
  @IsOptional()
  @IsString()
  @MaxLength(63)
  environment?: string;
}

export class EvaluationResultDto {
  @ApiProperty() key: string;
  @ApiProperty() enabled: boolean;
  @ApiProperty({ ...JSON_VALUE, description: 'any JSON value' }) value: JsonValue;
  @ApiProperty({ enum: EVALUATION_REASONS }) reason: EvaluationReason;
  @ApiPropertyOptional() variationId?: string;
  @ApiPropertyOptional() ruleId?: string;
  @ApiPropertyOptional() ruleIndex?: number;
  @ApiPropertyOptional({ enum: EVALUATION_ERROR_KINDS }) errorKind?: EvaluationErrorKind;
}

export class FlagVariationDto {
  @ApiProperty() id: string;
  @ApiProperty() name: string;
  @ApiProperty(JSON_VALUE) value: JsonValue;
  @ApiProperty() description: string;
  @ApiProperty() weight: number;
}

export class FlagWarningDto {
  @ApiProperty({ example: 'rules[0].clauses[1].values[0]' }) path: string;
  @ApiProperty({ example: "must be a number for 'lessThan': this value never matches" }) message: string;
}

export class FlagDto {
  @ApiProperty() id: string;
  @ApiProperty() key: string;
  @ApiProperty() name: string;
  @ApiProperty({ enum: FLAG_TYPES }) type: FlagType;
  @ApiProperty() enabled: boolean;
  @ApiProperty(JSON_VALUE) defaultValue: JsonValue;
  @ApiProperty() description: string;
  @ApiProperty({ type: [String] }) tags: string[];
  @ApiProperty({ nullable: true, type: String }) projectId: string | null;
  @ApiProperty() createdAt: string;
  @ApiProperty() updatedAt: string;
  @ApiProperty({ type: [FlagVariationDto] }) variations: FlagVariationDto[];
  @ApiProperty({ type: ClientSideAvailabilityDto, description: CLIENT_SIDE_AVAILABILITY_DESCRIPTION }) clientSideAvailability: ClientSideAvailabilityDto;
  @ApiProperty() environment: string;
  @ApiProperty(JSON_VALUE) offValue: JsonValue | null;
  @ApiProperty({ type: [TargetDto] }) targets: Target[];
  @ApiProperty({ type: [RuleDto] }) rules: Rule[];
  @ApiProperty({ type: [PrerequisiteDto] }) prerequisites: Prerequisite[];
  @ApiProperty({ nullable: true, type: String }) salt: string | null;
  @ApiProperty() version: string;
  @ApiProperty({ nullable: true, type: String, description: 'when an evaluator last evaluated the flag in this environment (recorded at most once a minute, so up to about a minute late); null: never' })
  lastEvaluatedAt: string | null;
  @ApiProperty({ nullable: true, type: String, description: 'since when the flag has served one value to everyone in this environment (off, or on with nothing but one variation); null: it serves several' })
  servingOneVariationSince: string | null;
  @ApiProperty({
    type: [FlagWarningDto],
    description: 'accepted data that can never match in this environment (clause values their operator cannot use, empty value lists, keys targeted twice), as LaunchDarkly evaluates them; empty when none',
  })
  warnings: FlagWarningDto[];
}

export class SkippedImportDto {
  @ApiProperty() key: string;
  @ApiProperty() reason: string;
}

export class ImportedSegmentsDto {
  @ApiProperty({ type: [String], description: 'keys of segments that did not exist in the environment before' }) created: string[];
  @ApiProperty({ type: [String], description: 'keys of existing segments of the environment that were replaced' }) replaced: string[];
}

export class ImportFlagsResultDto {
  @ApiProperty({ description: 'the environment written (X-Environment)' }) environment: string;
  @ApiProperty({ type: [String], description: 'keys of flags that did not exist before' }) created: string[];
  @ApiProperty({ type: [String], description: 'keys of existing flags whose variations and targeting in this environment were replaced' }) replaced: string[];
  @ApiProperty({ type: ImportedSegmentsDto, description: "the import's segments (`segments` beside `flags`), written in the same transaction" }) segments: ImportedSegmentsDto;
  @ApiProperty({ type: [SkippedImportDto], description: 'tombstones (`deleted: true`), not written' }) skipped: SkippedImportDto[];
  @ApiProperty({ type: [FlagDto], description: 'every imported flag as now seen in the environment, warnings included' }) flags: FlagDto[];
}
