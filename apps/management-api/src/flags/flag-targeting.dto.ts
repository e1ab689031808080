import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean } from 'class-validator';
import { JSON_VALUE } from '@flagship/service-kit';
import { OPERATORS, type ClientSideAvailability, type Clause, type FlagDefinition, type Operator, type Prerequisite, type Rollout, type Rule, type Target, type Variation, type WeightedVariation } from '@flagship/flag-evaluation';
import { FLAG_TYPES, type FlagType, type JsonValue } from '@flagship/domain';

/*
 * The targeting model as the OpenAPI document describes it. Validation is the evaluator's validator
 * (a path per problem); these classes only give generated clients the real shapes, and `implements`
 * keeps them in step with the evaluator's types.
 */

export class TargetDto implements Target {
  @ApiProperty() variationId: string;
  @ApiProperty({ type: [String], description: 'context keys' }) values: string[];
}

export class ClauseDto implements Clause {
  @ApiProperty({
    description:
      'without contextKind: a context attribute name, taken literally even when it starts with / (`key` is the context key); with contextKind: an attribute reference (`/a/b` reads nested objects; ~1 escapes /, ~0 escapes ~), as in LaunchDarkly',
  })
  attribute: string;
  @ApiPropertyOptional({ enum: ['user'], description: 'when set, `attribute` is an attribute reference; our contexts have the one kind `user`' }) contextKind?: string;
  @ApiProperty({ enum: OPERATORS }) op: Operator;
  @ApiProperty({ type: 'array', items: JSON_VALUE, description: 'any JSON values; one that can never match its operator never matches' }) values: JsonValue[];
  @ApiPropertyOptional() negate?: boolean;
}

export class WeightedVariationDto implements WeightedVariation {
  @ApiProperty() variationId: string;
  @ApiProperty({ description: 'relative: weights 1 and 3 split 25/75' }) weight: number;
}

export class RolloutDto implements Rollout {
  @ApiProperty({ type: [WeightedVariationDto] }) variations: WeightedVariationDto[];
  @ApiPropertyOptional({ description: 'attribute hashed for bucketing; default key. Literal, or a reference with contextKind, as a clause attribute' }) bucketBy?: string;
  @ApiPropertyOptional({ enum: ['user'], description: 'when set, `bucketBy` is an attribute reference' }) contextKind?: string;
  @ApiPropertyOptional({ description: 'when set and non-zero, replaces {flagKey}.{salt} in the hash input' }) seed?: number;
}

export class RuleDto implements Rule {
  @ApiProperty() id: string;
  @ApiPropertyOptional() description?: string;
  @ApiProperty({ type: [ClauseDto] }) clauses: ClauseDto[];
  @ApiPropertyOptional({ description: 'served when every clause matches; or rollout' }) variationId?: string;
  @ApiPropertyOptional({ type: RolloutDto }) rollout?: RolloutDto;
}

export class PrerequisiteDto implements Prerequisite {
  @ApiProperty({ description: 'key of another flag in the same environment' }) key: string;
  @ApiProperty({ description: 'the variation that flag must serve' }) variationId: string;
}

/** A variation as PATCH sends it: the full list, ids included. */
export class VariationDto implements Variation {
  @ApiProperty() id: string;
  @ApiProperty() name: string;
  @ApiProperty(JSON_VALUE) value: JsonValue;
  @ApiPropertyOptional() description?: string;
  @ApiProperty() weight: number;
}

/** Which client-side keys of orep-server may evaluate a flag (LaunchDarkly's field of the same name). */
export class ClientSideAvailabilityDto implements ClientSideAvailability {
  @ApiProperty({ description: "orep-server's browser keys (OREP_CLIENT_KEYS) evaluate the flag" })
  @IsBoolean()
  usingEnvironmentId: boolean;

  @ApiProperty({ description: "orep-server's mobile keys (OREP_MOBILE_KEYS) evaluate the flag" })
  @IsBoolean()
  usingMobileKey: boolean;
}

export const CLIENT_SIDE_AVAILABILITY_DESCRIPTION =
  'which client-side keys of orep-server may evaluate the flag, in every environment; both false (the default): server keys only. A client-side key evaluating any other flag gets FLAG_NOT_FOUND';

/** One flag of an export, as orep-server reads it (the evaluator's FlagDefinition). */
export class FlagDefinitionDto implements FlagDefinition {
  @ApiProperty() key: string;
  @ApiProperty({ enum: FLAG_TYPES }) type: FlagType;
  @ApiProperty(JSON_VALUE) defaultValue: JsonValue;
  @ApiProperty({ type: [VariationDto] }) variations: VariationDto[];
  @ApiProperty() enabled: boolean;
  @ApiPropertyOptional({ ...JSON_VALUE, description: 'served when off; absent: false for booleans, else defaultValue' }) offValue?: JsonValue;
  @ApiProperty({ type: [TargetDto] }) targets: TargetDto[];
  @ApiProperty({ type: [RuleDto] }) rules: RuleDto[];
  @ApiProperty({ type: [PrerequisiteDto] }) prerequisites: PrerequisiteDto[];
  @ApiPropertyOptional({ description: 'bucketing salt; default the flag key' }) salt?: string;
  @ApiPropertyOptional() version?: number;
  @ApiPropertyOptional({ type: ClientSideAvailabilityDto, description: `${CLIENT_SIDE_AVAILABILITY_DESCRIPTION}; absent: server keys only` })
  clientSideAvailability?: ClientSideAvailabilityDto;
}

/** The flag file orep-server serves (OREP_FLAGS_FILE). */
export class FlagExportDto {
  @ApiProperty({ description: 'format version of the file' }) version: number;
  @ApiProperty() tenantId: string;
  @ApiProperty() environment: string;
  @ApiProperty() generatedAt: string;
  @ApiProperty({ type: [FlagDefinitionDto] }) flags: FlagDefinitionDto[];
}
