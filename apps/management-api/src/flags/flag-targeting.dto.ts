import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean } from 'class-validator';
import { JSON_VALUE } from '@flagship/service-kit';
import {
  OPERATORS,
  type ClientSideAvailability,
  type Clause,
  type FlagDefinition,
  type Operator,
  type Prerequisite,
  type Rollout,
  type Rule,
  type SegmentDefinition,
  type SegmentRule,
  type SegmentTarget,
  type Target,
  type Variation,
  type WeightedVariation,
} from '@flagship/flag-evaluation';
import { FLAG_TYPES, type FlagType, type JsonValue } from '@flagship/domain';

/*
 * The targeting model as the OpenAPI document describes it. Validation is the evaluator's validator
 * (a path per problem); these classes only give generated clients the real shapes, and `implements`
 * keeps them in step with the evaluator's types.
 */

const CONTEXT_KIND = { pattern: '^[A-Za-z0-9._-]+$', example: 'organization' } as const;

export class TargetDto implements Target {
  @ApiProperty() variationId: string;
  @ApiProperty({ type: [String], description: 'context keys (of contextKind)' }) values: string[];
  @ApiPropertyOptional({ ...CONTEXT_KIND, description: "the kind of the keys; absent: 'user'. Targets are read in order, the first listing the context's key of its kind wins (LaunchDarkly's targets and contextTargets map onto this one list)" })
  contextKind?: string;
}

export class ClauseDto implements Clause {
  @ApiProperty({
    description:
      'without contextKind: a context attribute name, taken literally even when it starts with / (`key` is the context key); with contextKind: an attribute reference (`/a/b` reads nested objects; ~1 escapes /, ~0 escapes ~), as in LaunchDarkly',
  })
  attribute: string;
  @ApiPropertyOptional({ ...CONTEXT_KIND, description: "the context kind read (absent: 'user'; not 'kind' or 'multi'); when set, `attribute` is an attribute reference. A context without that kind never matches, negated or not" })
  contextKind?: string;
  @ApiProperty({ enum: OPERATORS, description: '`segmentMatch`: the context is in any of the segments whose keys are the values (the attribute is ignored)' }) op: Operator;
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
  @ApiPropertyOptional({ ...CONTEXT_KIND, description: "the context kind bucketed (absent: 'user'); when set, `bucketBy` is an attribute reference. A context without that kind takes bucket 0" }) contextKind?: string;
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

/* Segments (CONTRACT.md section 10): checked by the evaluator's checkSegmentDefinition, a path per problem. */

export class SegmentTargetDto implements SegmentTarget {
  @ApiProperty({ example: 'organization' }) contextKind: string;
  @ApiProperty({ type: [String], description: 'keys of contexts of that kind' }) values: string[];
}

export class SegmentRuleDto implements SegmentRule {
  @ApiProperty() id: string;
  @ApiProperty({ type: [ClauseDto], description: 'every clause must match; none: every context matches' }) clauses: ClauseDto[];
  @ApiPropertyOptional({ minimum: 0, maximum: 100000, description: "LaunchDarkly's absolute weight: the share of matching contexts included, out of 100000" }) weight?: number;
  @ApiPropertyOptional({ description: 'attribute hashed for the weight; default key (a reference with rolloutContextKind)' }) bucketBy?: string;
  @ApiPropertyOptional({ description: 'the context kind bucketed; default user' }) rolloutContextKind?: string;
}

/** A segment as evaluators hold it (the evaluator's SegmentDefinition). */
export class SegmentDefinitionDto implements SegmentDefinition {
  @ApiProperty() key: string;
  @ApiProperty() name: string;
  @ApiPropertyOptional() description?: string;
  @ApiProperty({ type: [String] }) included: string[];
  @ApiProperty({ type: [String] }) excluded: string[];
  @ApiProperty({ type: [SegmentTargetDto] }) includedContexts: SegmentTargetDto[];
  @ApiProperty({ type: [SegmentTargetDto] }) excludedContexts: SegmentTargetDto[];
  @ApiProperty({ type: [SegmentRuleDto] }) rules: SegmentRuleDto[];
  @ApiPropertyOptional({ description: 'bucketing salt of weighted rules; default the segment key' }) salt?: string;
  @ApiPropertyOptional() version?: number;
}

/** The flag file orep-server serves (OREP_FLAGS_FILE). */
export class FlagExportDto {
  @ApiProperty({ description: 'format version of the file' }) version: number;
  @ApiProperty() tenantId: string;
  @ApiProperty() environment: string;
  @ApiProperty() generatedAt: string;
  @ApiProperty({ type: [FlagDefinitionDto] }) flags: FlagDefinitionDto[];
  @ApiProperty({ type: [SegmentDefinitionDto], description: "the environment's segments, which flags name through segmentMatch" }) segments: SegmentDefinitionDto[];
}
