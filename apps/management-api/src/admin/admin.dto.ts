import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsIn, IsInt, IsISO8601, IsOptional, IsString, Max, MaxLength, Min, MinLength, NotEquals } from 'class-validator';
import { ENTITLEMENT_TIERS, type EntitlementTier } from '@flagship/domain';
import { TenantDto } from '../tenants/tenants.dto';

export class GrantEntitlementDto {
  @ApiProperty({ example: 'core' })
  @IsString()
  @MinLength(1)
  @MaxLength(64)
  productKey: string;

  @ApiProperty({ enum: ENTITLEMENT_TIERS })
  @IsIn(ENTITLEMENT_TIERS as unknown as string[], { message: `must be one of ${ENTITLEMENT_TIERS.join(', ')}` })
  tier: EntitlementTier;

  @ApiPropertyOptional({ example: '2027-01-01T00:00:00Z' })
  @IsOptional()
  @IsISO8601({ strict: true }, { message: 'must be an ISO 8601 timestamp' })
  validUntil?: string;
}

export class GrantCreditsDto {
  @ApiProperty({ description: 'micro-credits; negative for a correction', example: 1_000_000 })
  @IsInt()
  @NotEquals(0)
  @Min(-1e15)
  @Max(1e15)
  amount: number;

  @ApiProperty({ example: 'pilot allowance' })
  @IsString()
  @MinLength(1)
  @MaxLength(500)
  reason: string;
}

export class PatchTenantAdminDto {
  @ApiPropertyOptional()
  @IsOptional()
  @IsBoolean()
  zeroRated?: boolean;

  @ApiPropertyOptional()
  @IsOptional()
  @IsBoolean()
  hostedProviderAllowed?: boolean;
}

export class AdminUserDto {
  @ApiProperty() id: string;
  @ApiProperty() email: string;
  @ApiProperty() displayName: string;
  @ApiProperty({ nullable: true, type: String }) signInProvider: string | null;
  @ApiProperty() pending: boolean;
  @ApiProperty({ nullable: true, type: String }) lastAccessedAt: string | null;
  @ApiProperty() createdAt: string;
}

export class EntitlementDto {
  @ApiProperty() tenantId: string;
  @ApiProperty() productKey: string;
  @ApiProperty({ enum: ENTITLEMENT_TIERS }) tier: EntitlementTier;
  @ApiProperty({ nullable: true, type: String }) validUntil: string | null;
  @ApiProperty() updatedAt: string;
}

export class CreditBalanceDto {
  @ApiProperty() tenantId: string;
  @ApiProperty({ description: 'micro-credits' }) balance: number;
  @ApiProperty({ description: 'micro-credits held by requests in flight' }) reserved: number;
}

export class AdminTenantDto extends TenantDto {
  @ApiProperty() zeroRated: boolean;
  @ApiProperty() hostedProviderAllowed: boolean;
}
