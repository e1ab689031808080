import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsEmail, IsOptional, IsString, MaxLength, MinLength } from 'class-validator';

export class CreateDevAccountDto {
  @ApiProperty({ example: 'ada@example.com' })
  @IsEmail({}, { message: 'must be a valid e-mail address' })
  @MaxLength(254)
  email: string;

  @ApiProperty({ minLength: 8 })
  @IsString()
  @MinLength(8, { message: 'must be at least 8 characters' })
  @MaxLength(128)
  password: string;

  @ApiPropertyOptional()
  @IsOptional()
  @IsString()
  @MaxLength(200)
  displayName?: string;

  @ApiPropertyOptional({ default: true, description: "the tokens' email_verified claim; false acts as a provider that has not verified the address" })
  @IsOptional()
  @IsBoolean()
  emailVerified?: boolean;
}

/** Either `{email, password}` (password sign-in) or `{email, providerName}` (federated sign-in). */
export class DevTokenDto {
  @ApiProperty()
  @IsEmail({}, { message: 'must be a valid e-mail address' })
  @MaxLength(254)
  email: string;

  @ApiPropertyOptional()
  @IsOptional()
  @IsString()
  @MaxLength(128)
  password?: string;

  @ApiPropertyOptional({ example: 'google.com' })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  providerName?: string;

  @ApiPropertyOptional({ default: true, description: "federated sign-in only: the token's email_verified claim" })
  @IsOptional()
  @IsBoolean()
  emailVerified?: boolean;
}

export class DevTokenResponseDto {
  @ApiProperty()
  idToken: string;

  @ApiProperty()
  uid: string;
}
