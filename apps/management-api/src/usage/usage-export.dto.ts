import { ApiProperty, ApiPropertyOptional, OmitType } from '@nestjs/swagger';
import { IsIn, IsOptional, IsString, Matches } from 'class-validator';
import { TIMESTAMP, TIMESTAMP_MESSAGE, UsageFilterDto } from './usage.dto';

export const USAGE_EXPORT_FORMATS = ['csv', 'jsonl'] as const;
export type UsageExportFormat = (typeof USAGE_EXPORT_FORMATS)[number];

/** The longest range one export covers: a year, leap or not. */
export const USAGE_EXPORT_MAX_DAYS = 366;

/** GET /api/usage/export: the list's filter, with both ends of the range required and bounded. */
export class ExportUsageQueryDto extends OmitType(UsageFilterDto, ['from', 'to'] as const) {
  @ApiProperty({ description: 'rows created at or after this instant', example: '2026-11-01T00:00:00Z' })
  @IsString()
  @Matches(TIMESTAMP, { message: TIMESTAMP_MESSAGE })
  from!: string;

  @ApiProperty({ description: `rows created before this instant (exclusive); at most ${USAGE_EXPORT_MAX_DAYS} days after from`, example: '2026-12-01T00:00:00Z' })
  @IsString()
  @Matches(TIMESTAMP, { message: TIMESTAMP_MESSAGE })
  to!: string;

  @ApiPropertyOptional({
    enum: USAGE_EXPORT_FORMATS,
    default: 'csv',
    description: 'csv: RFC 4180 with a header row, CRLF line ends; jsonl: one JSON object per line (numbers and booleans typed)',
  })
  @IsOptional()
  @IsIn(USAGE_EXPORT_FORMATS as unknown as string[], { message: `must be one of ${USAGE_EXPORT_FORMATS.join(', ')}` })
  format?: UsageExportFormat;
}
