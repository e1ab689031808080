import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsOptional, IsString, Matches, MaxLength, MinLength } from 'class-validator';

export class CreateEnvironmentDto {
  @ApiProperty({ example: 'qa', pattern: '^[a-z0-9][a-z0-9-]{0,62}$' })
  @IsString()
  @Matches(/^[a-z0-9][a-z0-9-]{0,62}$/, { message: 'must be 1-63 lowercase letters, digits or dashes' })
  key: string;

  @ApiProperty({ example: 'QA' })
  @IsString()
  @MinLength(1)
  @MaxLength(100)
  name: string;
}

export class UpdateEnvironmentDto {
  @ApiPropertyOptional({ example: 'QA' })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(100)
  name?: string;

  @ApiPropertyOptional({ description: "when true, a direct change to a flag's settings here is a 409 approval-required: it goes through a change request" })
  @IsOptional()
  @IsBoolean()
  requireApproval?: boolean;
}

export class EnvironmentDto {
  @ApiProperty() key: string;
  @ApiProperty() name: string;
  @ApiProperty({ description: "a change to a flag's settings here needs a change request approved by another member" }) requireApproval: boolean;
  @ApiProperty() createdAt: string;
}
