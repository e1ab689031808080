import { ApiProperty } from '@nestjs/swagger';

export class SubscriptionDto {
  @ApiProperty({ type: String, nullable: true, description: 'the Stripe subscription id; null while the tenant has none (the free plan)' })
  id: string | null;

  @ApiProperty({ enum: ['free', 'standard', 'premium'] })
  plan: string;

  @ApiProperty({ example: 'active', description: "Stripe's subscription status (active, trialing, past_due, canceled, ...)" })
  status: string;

  @ApiProperty({ type: String, format: 'date-time', nullable: true })
  currentPeriodStart: string | null;

  @ApiProperty({ type: String, format: 'date-time', nullable: true })
  currentPeriodEnd: string | null;

  @ApiProperty()
  cancelAtPeriodEnd: boolean;

  @ApiProperty({ example: 'core' })
  productKey: string;
}
