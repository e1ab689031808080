import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, IsUrl, Matches, MaxLength } from 'class-validator';
import { NO_CONTROL_CHARS, REDIRECT_URL } from './checkout.dto';

export class PortalDto {
  @ApiProperty({ example: 'https://app.example.com/billing' })
  @IsString()
  @MaxLength(2000)
  @IsUrl(REDIRECT_URL)
  @Matches(NO_CONTROL_CHARS, { message: 'must not contain control characters' })
  returnUrl: string;

  @ApiPropertyOptional({ example: 'core', description: 'scopes the Stripe customer (one per tenant and product key); default core' })
  @IsOptional()
  @IsString()
  @Matches(/^[a-z][a-z0-9_]{0,63}$/)
  productKey?: string;
}
