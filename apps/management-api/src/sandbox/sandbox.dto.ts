import { ApiProperty } from '@nestjs/swagger';

export class SandboxStatusDto {
  @ApiProperty() active: boolean;
  @ApiProperty() expiresAt: string;
}

export class SandboxIndicatorsDto {
  @ApiProperty() flagsUsed: number;
  @ApiProperty() evaluations: number;
}

export class SandboxDemoDataDto {
  @ApiProperty({ type: [String] }) flags: string[];
  @ApiProperty({ type: [String] }) users: string[];
}
