import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsEmail, IsIn, IsOptional, IsString, MaxLength, MinLength } from 'class-validator';
import { TENANT_ROLES, type TenantRole } from '@flagship/domain';

export class CreateTenantDto {
  @ApiProperty({ example: 'Acme' })
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  name: string;

  @ApiProperty({ example: 'ops@acme.example' })
  @IsEmail({}, { message: 'must be a valid e-mail address' })
  @MaxLength(254)
  primaryEmail: string;

  @ApiPropertyOptional({ example: 'Ada Lovelace' })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  contactName?: string;

  @ApiPropertyOptional({ default: false })
  @IsOptional()
  @IsBoolean()
  isSandbox?: boolean;
}

export class AddTenantUserDto {
  @ApiProperty({ example: 'grace@acme.example' })
  @IsEmail({}, { message: 'must be a valid e-mail address' })
  @MaxLength(254)
  email: string;

  @ApiProperty({ enum: TENANT_ROLES })
  @IsIn(TENANT_ROLES as unknown as string[], { message: `must be one of ${TENANT_ROLES.join(', ')}` })
  role: TenantRole;
}

export class UpdateTenantUserDto {
  @ApiProperty({ enum: TENANT_ROLES })
  @IsIn(TENANT_ROLES as unknown as string[], { message: `must be one of ${TENANT_ROLES.join(', ')}` })
  role: TenantRole;
}

export class TenantSubscriptionDto {
  @ApiProperty({ example: 'free' }) plan: string;
  @ApiProperty({ example: 'active' }) status: string;
}

export class TenantDto {
  @ApiProperty() id: string;
  @ApiProperty() name: string;
  @ApiProperty() primaryEmail: string;
  @ApiProperty() contactName: string;
  @ApiProperty() isSandbox: boolean;
  @ApiProperty({ type: TenantSubscriptionDto }) subscription: TenantSubscriptionDto;
  @ApiProperty() createdAt: string;
}

export class InvitationDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ format: 'uuid' }) tenantId: string;
  @ApiProperty() tenantName: string;
  @ApiProperty() email: string;
  @ApiProperty({ enum: TENANT_ROLES }) role: TenantRole;
  @ApiProperty({ enum: ['pending', 'accepted', 'declined'] }) status: 'pending' | 'accepted' | 'declined';
  @ApiProperty() createdAt: string;
  @ApiProperty({ description: 'when it can no longer be answered (INVITATION_TTL_DAYS after it was sent or last re-sent); it is withdrawn sooner if its inviter stops being an admin' })
  expiresAt: string;
  @ApiProperty({ nullable: true, type: String }) respondedAt: string | null;
}

export class TenantUserDto {
  @ApiProperty() userId: string;
  @ApiProperty() email: string;
  @ApiProperty() displayName: string;
  @ApiProperty({ enum: TENANT_ROLES }) role: TenantRole;
  @ApiProperty({ enum: ['active', 'invited'], description: 'invited: added by e-mail, not signed in yet (removing them withdraws the invitation)' })
  status: 'active' | 'invited';
  @ApiProperty({ nullable: true, type: String, description: 'last request in this tenant (updated at most once a minute)' }) lastAccessedAt: string | null;
  @ApiProperty() createdAt: string;
}
