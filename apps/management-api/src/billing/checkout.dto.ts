import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsInt, IsString, IsUrl, Matches, Max, MaxLength, Min, ValidateIf } from 'class-validator';
import { PLAN_IDS, type PlanId } from '@flagship/billing';

/** http(s) URLs, localhost included (Stripe redirects the browser there). */
export const REDIRECT_URL = { require_protocol: true, require_tld: false, protocols: ['http', 'https'] };

/** isURL lets control characters (NUL included) through in a path; a redirect address has none. */
export const NO_CONTROL_CHARS = /^[^\u0000-\u001f\u007f]*$/;

export class CheckoutDto {
  @ApiProperty({ enum: ['subscription', 'credits'], description: 'subscription: a plan; credits: a one-time purchase of AI gateway credits' })
  @IsIn(['subscription', 'credits'])
  type: 'subscription' | 'credits';

  @ApiPropertyOptional({ enum: PLAN_IDS, description: 'required when type is subscription' })
  @ValidateIf((o: CheckoutDto) => o.type === 'subscription' || o.planId !== undefined)
  @IsIn(PLAN_IDS)
  planId?: PlanId;

  @ApiPropertyOptional({ minimum: 50, maximum: 1000000, description: 'credits only: the price paid, in cents (USD); billing-worker grants BILLING_MICRO_CREDITS_PER_CENT micro-credits per cent paid' })
  @ValidateIf((o: CheckoutDto) => o.type === 'credits' || o.amount !== undefined)
  @IsInt()
  @Min(50)
  @Max(1000000)
  amount?: number;

  @ApiProperty({ example: 'https://app.example.com/billing/done' })
  @IsString()
  @MaxLength(2000)
  @IsUrl(REDIRECT_URL)
  @Matches(NO_CONTROL_CHARS, { message: 'must not contain control characters' })
  successUrl: string;

  @ApiProperty({ example: 'https://app.example.com/billing' })
  @IsString()
  @MaxLength(2000)
  @IsUrl(REDIRECT_URL)
  @Matches(NO_CONTROL_CHARS, { message: 'must not contain control characters' })
  cancelUrl: string;
}

export class BillingSessionDto {
  @ApiProperty({ description: 'the hosted Stripe page (Checkout, or the customer portal) to send the browser to' })
  url: string;
}
