import { ApiProperty } from '@nestjs/swagger';
import { IsIn, IsInt, Matches, Max, Min } from 'class-validator';
import { BUDGET_KINDS, type BudgetKind } from '@flagship/ledger';

/** The most a cap may be: a safe integer of micro-credits. */
export const MAX_MONTHLY_CAP = Number.MAX_SAFE_INTEGER;

/**
 * `{kind}/{scopeId}` of a budget's path: an OAuth client id, or a product key as the gateway receives it in
 * `x-service-product-key` (visible ASCII, no spaces; both at most 64 characters, as the tables hold them).
 */
export class BudgetPathDto {
  @ApiProperty({ enum: BUDGET_KINDS, description: '`client`: an OAuth client of the tenant; `product`: a product key' })
  @IsIn(BUDGET_KINDS)
  kind: BudgetKind;

  @ApiProperty({ description: 'the OAuth client id, or the product key', maxLength: 64, example: 'ffc_1a2b3c4d5e6f7g8h9i0j1k' })
  @Matches(/^[\x21-\x7e]{1,64}$/, { message: 'scopeId must be 1 to 64 visible ASCII characters' })
  scopeId: string;
}

export class PutBudgetDto {
  @ApiProperty({ description: 'micro-credits a month (UTC calendar month): a request is refused (402 budget_exceeded) while what the month has spent and holds leaves less than its estimate; 0 refuses every request', minimum: 0, example: 5_000_000 })
  @IsInt()
  @Min(0)
  @Max(MAX_MONTHLY_CAP)
  monthlyCapMicroCredits: number;
}

export class BudgetDto {
  @ApiProperty({ enum: BUDGET_KINDS }) kind: BudgetKind;
  @ApiProperty({ description: 'the OAuth client id, or the product key' }) id: string;
  @ApiProperty({ description: 'micro-credits a month' }) monthlyCapMicroCredits: number;
  @ApiProperty({ description: "micro-credits this month's completed requests of its client or product key debited (from the month's start: a budget set mid-month starts from what was already spent)" }) spentMicroCredits: number;
  @ApiProperty({ description: 'micro-credits held now by its requests in flight' }) reservedMicroCredits: number;
  @ApiProperty({ description: 'the month spent and reserved are of: YYYY-MM, UTC', example: '2026-11' }) month: string;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ format: 'date-time' }) updatedAt: string;
}
