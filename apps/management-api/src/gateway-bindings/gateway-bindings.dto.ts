import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsBoolean, IsInt, IsNumber, IsObject, IsOptional, IsString, Matches, Max, MaxLength, Min, ValidateNested } from 'class-validator';
import { FLAG_KEY_PATTERN } from '@flagship/domain';

/** Stages a rollout plan may have (1%, 5%, 25%, 100% is four). */
export const MAX_ROLLOUT_STAGES = 10;
/** Variations a binding may cap (a flag's variations are bounded far below this). */
export const MAX_SPEND_CAPS = 50;

export class RolloutStageDto {
  @ApiProperty({ description: 'percent of the traffic the treatment gets at this stage', minimum: 0, maximum: 100, example: 5 })
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(0)
  @Max(100)
  percent: number;

  @ApiPropertyOptional({ description: 'requests the stage sees before it may advance', minimum: 0 })
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(1_000_000_000)
  minRequests?: number;

  @ApiPropertyOptional({ description: 'minutes the stage is held before it may advance', minimum: 0 })
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(525_600)
  minMinutes?: number;
}

export class RolloutGuardsDto {
  @ApiPropertyOptional({ description: "the treatment's error rate above the control's that rolls it back (0..1)", minimum: 0, maximum: 1 })
  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(0)
  @Max(1)
  errorRate?: number;

  @ApiPropertyOptional({ description: "the treatment's p95 latency (ms) above the control's that rolls it back", minimum: 0 })
  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(0)
  @Max(3_600_000)
  p95LatencyMs?: number;

  @ApiPropertyOptional({ description: "the treatment's cost per request (micro-credits) above the control's that rolls it back", minimum: 0 })
  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(0)
  @Max(Number.MAX_SAFE_INTEGER)
  costPerRequest?: number;
}

export class RolloutPlanDto {
  @ApiProperty({ type: [RolloutStageDto], minItems: 1, maxItems: MAX_ROLLOUT_STAGES })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(MAX_ROLLOUT_STAGES)
  @ValidateNested({ each: true })
  @Type(() => RolloutStageDto)
  stages: RolloutStageDto[];

  @ApiProperty({ type: RolloutGuardsDto })
  @IsObject()
  @ValidateNested()
  @Type(() => RolloutGuardsDto)
  guards: RolloutGuardsDto;
  @ApiPropertyOptional({ description: "the variation (id or name) the plan rolls out; absent: the flag's first variation other than the control (its off variation)", maxLength: 200 })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  treatment?: string;

  @ApiPropertyOptional({ description: 'a paused plan writes nothing more until this is false again' })
  @IsOptional()
  @IsBoolean()
  paused?: boolean;
}

/** `PUT /api/gateway/bindings/{productKey}`: the whole binding (a PUT replaces every field). */
export class PutGatewayBindingDto {
  @ApiProperty({ description: 'a JSON flag of the environment (X-Environment, default production) whose variations are `{model, provider?, params?}`', example: 'support-bot-model' })
  @IsString()
  @Matches(FLAG_KEY_PATTERN, { message: 'flagKey must be a flag key' })
  flagKey: string;

  @ApiPropertyOptional({ type: String, nullable: true, description: 'only requests asking for this model are routed by the flag; absent: every chat, Messages and Responses request of the product key (embeddings only when named here)', maxLength: 200 })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  modelAlias?: string | null;

  @ApiPropertyOptional({ type: RolloutPlanDto, nullable: true, description: 'a guarded rollout: stages advanced by the platform while the guards hold' })
  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => RolloutPlanDto)
  rolloutPlan?: RolloutPlanDto | null;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: { type: 'integer', minimum: 0 },
    nullable: true,
    description: `variation id -> monthly spend cap in micro-credits (the budgets' units, UTC calendar month), at most ${MAX_SPEND_CAPS}; past its cap a variation's requests go to the control (the flag's off variation)`,
    example: { 'variation-b': 5_000_000 },
  })
  @IsOptional()
  @IsObject()
  spendCaps?: Record<string, number> | null;
}

export class GatewayBindingDto {
  @ApiProperty() productKey: string;
  @ApiProperty() flagKey: string;
  @ApiProperty({ type: String, nullable: true }) modelAlias: string | null;
  @ApiProperty({ description: 'the environment whose flag the gateway evaluates' }) environment: string;
  @ApiProperty({ type: RolloutPlanDto, nullable: true }) rolloutPlan: RolloutPlanDto | null;
  @ApiProperty({ type: 'object', additionalProperties: { type: 'integer' }, nullable: true }) spendCaps: Record<string, number> | null;
  @ApiProperty({ description: 'bumped by every write; the ETag is its quoted value' }) version: number;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ format: 'date-time' }) updatedAt: string;
}

export class GatewayBindingAuditEntryDto {
  @ApiProperty({ enum: ['create', 'update', 'delete'] }) action: string;
  @ApiProperty() actor: string;
  @ApiProperty({ type: 'object', additionalProperties: true, description: 'create: the binding; update: field -> {from, to}; delete: the binding removed' }) changes: Record<string, unknown>;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
}
