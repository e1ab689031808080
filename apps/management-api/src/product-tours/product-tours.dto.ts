import { ApiProperty } from '@nestjs/swagger';
import { IsBoolean } from 'class-validator';

export class PutProductTourDto {
  @ApiProperty()
  @IsBoolean()
  completed: boolean;
}

export class ProductTourStatusDto {
  @ApiProperty() completed: boolean;
  @ApiProperty({ nullable: true, type: String }) completed_at: string | null;
  @ApiProperty() created_at: string;
  @ApiProperty() updated_at: string;
}
