import { ApiProperty } from '@nestjs/swagger';
import { ROLLOUT_DECISIONS, ROLLOUT_STATUSES } from './rollouts.repository';

export class RolloutStateDto {
  @ApiProperty({ description: 'the binding version whose plan this is' }) bindingVersion: number;
  @ApiProperty({ enum: ROLLOUT_STATUSES }) status: string;
  @ApiProperty({ description: '0-based index of the current stage' }) stage: number;
  @ApiProperty() stageStartedAt: string;
  @ApiProperty({ nullable: true, type: String }) controlVariationId: string | null;
  @ApiProperty({ nullable: true, type: String }) treatmentVariationId: string | null;
  @ApiProperty({ nullable: true, type: Number, description: 'the flag version the plan last wrote' }) flagVersion: number | null;
  @ApiProperty({ nullable: true, type: String }) lastReason: string | null;
  @ApiProperty() nextCheckAt: string;
}

export class RolloutDecisionDto {
  @ApiProperty() id: string;
  @ApiProperty() at: string;
  @ApiProperty({ enum: ROLLOUT_DECISIONS }) decision: string;
  @ApiProperty() bindingVersion: number;
  @ApiProperty() flagKey: string;
  @ApiProperty() stage: number;
  @ApiProperty({ description: 'the treatment percent after the decision' }) percent: number;
  @ApiProperty() reason: string;
  @ApiProperty({ type: 'object', nullable: true, additionalProperties: true, description: 'control and treatment figures since the stage began, and the differences with their 95% intervals' }) figures: unknown;
  @ApiProperty({ nullable: true, type: Number }) flagVersion: number | null;
}

export class RolloutViewDto {
  @ApiProperty() productKey: string;
  @ApiProperty() flagKey: string;
  @ApiProperty({ type: 'object', nullable: true, additionalProperties: true, description: "the binding's rolloutPlan" }) plan: unknown;
  @ApiProperty({ type: RolloutStateDto, nullable: true, description: 'null until the runner first judged the plan' }) state: RolloutStateDto | null;
  @ApiProperty({ type: [RolloutDecisionDto], description: 'newest first, at most 200' }) decisions: RolloutDecisionDto[];
}
