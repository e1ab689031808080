import { ApiProperty } from '@nestjs/swagger';
import { IsInt, Max, Min } from 'class-validator';

/** The most a threshold may be: a safe integer of micro-credits. */
export const MAX_LOW_BALANCE_THRESHOLD = Number.MAX_SAFE_INTEGER;

export class PutLowBalanceAlertDto {
  @ApiProperty({ description: 'micro-credits: a settlement taking the balance from above this to at or below it is recorded (and published) once', minimum: 0, example: 100_000 })
  @IsInt()
  @Min(0)
  @Max(MAX_LOW_BALANCE_THRESHOLD)
  threshold: number;
}

export class LowBalanceAlertDto {
  @ApiProperty({ nullable: true, type: Number, description: 'micro-credits; null when no threshold is set' })
  threshold: number | null;

  @ApiProperty({ description: 'whether the next fall to or below the threshold will be recorded (false once it has been, until the balance goes back above it)' })
  armed: boolean;

  @ApiProperty({ description: 'the balance is at or below the threshold now' })
  below: boolean;

  @ApiProperty({ description: 'micro-credits, as GET /api/billing/credits' })
  balance: number;
}

export class LowBalanceCrossingDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ description: 'the threshold crossed, micro-credits' }) threshold: number;
  @ApiProperty({ description: 'the balance the crossing settlement left, micro-credits' }) balance: number;
  @ApiProperty({ format: 'date-time' }) crossedAt: string;
}
