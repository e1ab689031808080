import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, Matches, MaxLength, MinLength } from 'class-validator';

const COLOR = /^#[0-9a-fA-F]{6}$/;

export class CreateProjectDto {
  @ApiProperty({ example: 'Checkout' })
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  name: string;

  @ApiPropertyOptional()
  @IsOptional()
  @IsString()
  @MaxLength(2000)
  description?: string;

  @ApiPropertyOptional({ example: '#10b981' })
  @IsOptional()
  @IsString()
  @Matches(COLOR, { message: 'must be a hex colour like #rrggbb' })
  color?: string;
}

export class UpdateProjectDto {
  @ApiPropertyOptional()
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  name?: string;

  @ApiPropertyOptional()
  @IsOptional()
  @IsString()
  @MaxLength(2000)
  description?: string;

  @ApiPropertyOptional()
  @IsOptional()
  @IsString()
  @Matches(COLOR, { message: 'must be a hex colour like #rrggbb' })
  color?: string;
}

export class ProjectDto {
  @ApiProperty() id: string;
  @ApiProperty() name: string;
  @ApiProperty() description: string;
  @ApiProperty() color: string;
  @ApiProperty() flagCount: number;
  @ApiProperty() createdAt: string;
  @ApiProperty() updatedAt: string;
}
