import { ApiProperty } from '@nestjs/swagger';

export class CreditsDto {
  @ApiProperty({ description: 'micro-credits; may fall below 0 by at most one request\'s cost', example: 1_000_000 })
  balance: number;

  @ApiProperty({ description: 'micro-credits held by gateway requests in flight (pending usage rows)', example: 0 })
  reserved: number;
}
