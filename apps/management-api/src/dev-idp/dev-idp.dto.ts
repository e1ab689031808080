import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsEmail, IsOptional, IsString, MaxLength, MinLength } from 'class-validator';

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
}

export class DevTokenResponseDto {
  @ApiProperty()
  idToken: string;

  @ApiProperty()
  uid: string;
}
