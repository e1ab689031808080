import { ApiProperty, ApiPropertyOptional, IntersectionType } from '@nestjs/swagger';
import { IsIn, IsOptional, IsString, Matches } from 'class-validator';
import { USAGE_STATUSES, type UsageStatus } from '@flagship/ledger';
import { PageQueryDto } from '@flagship/service-kit';

export { USAGE_STATUSES, type UsageStatus };

/**
 * A date (midnight UTC) or a date-time with `Z` or an offset: a time without a zone would be read in
 * the server's zone, so it is refused rather than guessed.
 */
export const TIMESTAMP = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2}))?$/;
export const TIMESTAMP_MESSAGE = 'must be an ISO 8601 date or date-time with a zone, e.g. 2026-11-01T00:00:00Z';

/** What the gateway records of a caller's x-request-id (service-kit's clientRequestIdOf); anything else names no row. */
const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const CLIENT_REQUEST_ID_MESSAGE = 'must be 1 to 128 of A-Z a-z 0-9 . _ : - (as the gateway records an x-request-id)';

/** The filter both `GET /api/usage` and `GET /api/usage/summary` take. */
export class UsageFilterDto {
  @ApiPropertyOptional({ description: 'rows created at or after this instant', example: '2026-11-01T00:00:00Z' })
  @IsOptional()
  @IsString()
  @Matches(TIMESTAMP, { message: TIMESTAMP_MESSAGE })
  from?: string;

  @ApiPropertyOptional({ description: 'rows created before this instant (exclusive)', example: '2026-12-01T00:00:00Z' })
  @IsOptional()
  @IsString()
  @Matches(TIMESTAMP, { message: TIMESTAMP_MESSAGE })
  to?: string;

  @ApiPropertyOptional({ example: 'core' })
  @IsOptional()
  @IsString()
  @Matches(/^[a-z0-9_]{1,64}$/, { message: 'must be a product key (lower-case letters, digits, _)' })
  productKey?: string;

  @ApiPropertyOptional({ enum: USAGE_STATUSES })
  @IsOptional()
  @IsIn(USAGE_STATUSES as unknown as string[], { message: `must be one of ${USAGE_STATUSES.join(', ')}` })
  status?: UsageStatus;

  @ApiPropertyOptional({ example: 'gpt-4o-mini' })
  @IsOptional()
  @IsString()
  // No control characters: a NUL would reach Postgres as an encoding error.
  @Matches(/^[^\u0000-\u001f\u007f]{1,256}$/u, { message: 'must be a model name of 1 to 256 printable characters' })
  model?: string;

  @ApiPropertyOptional({ description: "the caller's own x-request-id its gateway request carried (clientRequestId)", example: 'order-7f3a:42' })
  @IsOptional()
  @IsString()
  @Matches(CLIENT_REQUEST_ID, { message: CLIENT_REQUEST_ID_MESSAGE })
  clientRequestId?: string;
}

/** The list's query: the filter plus `limit` and `cursor` (validation and schema of both kept). */
export class ListUsageQueryDto extends IntersectionType(PageQueryDto, UsageFilterDto) {}

export class UsageRowDto {
  @ApiProperty() id: string;
  @ApiProperty({ description: 'the OAuth client that called the gateway' }) clientId: string;
  @ApiProperty({ example: 'core' }) productKey: string;
  @ApiProperty({ description: 'the provider that served, after any fallback', example: 'inhouse' }) provider: string;
  @ApiProperty({ nullable: true, type: String, description: 'the provider asked for, when another one served' }) requestedProvider: string | null;
  @ApiProperty({ example: 'gpt-4o-mini' }) model: string;
  @ApiProperty({ enum: ['chat.completions', 'embeddings', 'messages', 'responses'], description: 'the gateway route: messages is Anthropic\'s Messages API, responses OpenAI\'s Responses API' }) endpoint: string;
  @ApiProperty() stream: boolean;
  @ApiProperty({ enum: USAGE_STATUSES }) status: UsageStatus;
  @ApiProperty({ description: 'micro-credits held while pending' }) reserved: number;
  @ApiProperty({ description: 'micro-credits charged' }) debit: number;
  @ApiProperty() zeroRated: boolean;
  @ApiProperty({ nullable: true, type: String }) zeroRatedReason: string | null;
  @ApiProperty() inputTokens: number;
  @ApiProperty() outputTokens: number;
  @ApiProperty({ description: 'of inputTokens, those the provider reported as cached (prompt_tokens_details.cached_tokens), charged at cachedInputPer1k when set' })
  cachedTokens: number;
  @ApiProperty({ nullable: true, type: Number, description: 'micro-credits per 1,000 input tokens the row was charged at (fixed when the request was admitted); null on rows from before prices were recorded' })
  inputPer1k: number | null;
  @ApiProperty({ nullable: true, type: Number, description: 'micro-credits per 1,000 output tokens the row was charged at; null on rows from before prices were recorded' })
  outputPer1k: number | null;
  @ApiProperty({ nullable: true, type: Number, description: 'micro-credits per 1,000 cached input tokens the row was charged at; null when the model has no cached price (cached tokens cost inputPer1k)' })
  cachedInputPer1k: number | null;
  @ApiProperty({ description: 'true when the provider reported no usage: the input is charged at the admission estimate, the output at what was read (for a non-streamed answer never read, the output reserved)' }) usageEstimated: boolean;
  @ApiProperty({ description: 'true when the debit exceeded the reservation (the provider produced more than the output limit it was told)' }) overrun: boolean;
  @ApiProperty({ nullable: true, type: String }) errorCode: string | null;
  @ApiProperty({ nullable: true, type: Number }) latencyMs: number | null;
  @ApiProperty({ nullable: true, type: String, description: "the gateway's id of the request (its x-request-id answer header)" }) requestId: string | null;
  @ApiProperty({ nullable: true, type: String, description: "the caller's own x-request-id, when it sent one of 1 to 128 of A-Z a-z 0-9 . _ : - (echoed as x-client-request-id)" })
  clientRequestId: string | null;
  @ApiProperty() createdAt: string;
  @ApiProperty({ nullable: true, type: String }) completedAt: string | null;
}

export class UsageTotalsDto {
  @ApiProperty() requests: number;
  @ApiProperty() inputTokens: number;
  @ApiProperty() outputTokens: number;
  @ApiProperty({ description: 'micro-credits' }) debit: number;
}

export class UsageGroupDto extends UsageTotalsDto {
  @ApiProperty() productKey: string;
  @ApiProperty() model: string;
}

export class UsageSummaryDto {
  @ApiProperty({ nullable: true, type: String, description: 'the filter\'s from, normalised' }) from: string | null;
  @ApiProperty({ nullable: true, type: String, description: 'the filter\'s to, normalised' }) to: string | null;
  @ApiProperty({ type: UsageTotalsDto, description: 'every row of the filter' }) totals: UsageTotalsDto;
  @ApiProperty({ type: [UsageGroupDto], description: 'per product key and model, ordered by both' }) byProductAndModel: UsageGroupDto[];
}

export class UsageDayDto extends UsageGroupDto {
  @ApiProperty({ description: 'the UTC day', example: '2026-11-01' }) day: string;
}

export class UsageDailyDto {
  @ApiProperty({ nullable: true, type: String, description: 'the filter\'s from, normalised' }) from: string | null;
  @ApiProperty({ nullable: true, type: String, description: 'the filter\'s to, normalised' }) to: string | null;
  @ApiProperty({ type: [UsageDayDto], description: 'per UTC day, product key and model, ordered by all three; days without usage left out' }) days: UsageDayDto[];
}
