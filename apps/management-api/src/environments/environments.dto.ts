import { ApiProperty } from '@nestjs/swagger';
import { IsString, Matches, MaxLength, MinLength } from 'class-validator';

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

export class EnvironmentDto {
  @ApiProperty() key: string;
  @ApiProperty() name: string;
  @ApiProperty() createdAt: string;
}
