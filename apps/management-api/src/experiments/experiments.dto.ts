import { ApiProperty, ApiPropertyOptional, PickType } from '@nestjs/swagger';
import { UsageFilterDto } from '../usage/usage.dto';

/** The report's query: a range (default the last 7 days, at most 92) and optionally one product key. */
export class ExperimentQueryDto extends PickType(UsageFilterDto, ['from', 'to', 'productKey'] as const) {}

export class DifferenceDto {
  @ApiProperty({ description: 'treatment minus control' }) estimate: number;
  @ApiProperty({ description: 'lower bound of the 95% interval' }) lower: number;
  @ApiProperty({ description: 'upper bound of the 95% interval' }) upper: number;
  @ApiProperty({ enum: ['newcombe-hybrid-score', 'welch-t', 'maritz-jarrett'] }) method: string;
}

export class VsControlDto {
  @ApiPropertyOptional({ type: DifferenceDto, description: 'error rate (0..1), Newcombe hybrid score interval' }) errorRate?: DifferenceDto;
  @ApiPropertyOptional({ type: DifferenceDto, description: 'mean micro-credits per request, Welch t interval' }) costPerRequest?: DifferenceDto;
  @ApiPropertyOptional({ type: DifferenceDto, description: 'p95 total latency (ms), Maritz–Jarrett standard errors' }) latencyP95Ms?: DifferenceDto;
  @ApiPropertyOptional({ type: DifferenceDto, description: 'p95 time to first token of streams (ms), Maritz–Jarrett' }) timeToFirstTokenP95Ms?: DifferenceDto;
  @ApiPropertyOptional({ type: DifferenceDto, description: 'mean feedback score, Welch t interval' }) feedback?: DifferenceDto;
}

export class QuantilesDto {
  @ApiProperty({ description: 'values the quantiles are of (succeeded requests)' }) n: number;
  @ApiProperty({ nullable: true, type: Number, description: 'percentile_disc(0.5)' }) p50: number | null;
  @ApiProperty({ nullable: true, type: Number, description: 'percentile_disc(0.95)' }) p95: number | null;
}

export class FeedbackFiguresDto {
  @ApiProperty() n: number;
  @ApiProperty({ nullable: true, type: Number }) mean: number | null;
}

export class VariationReportDto {
  @ApiProperty({ nullable: true, type: String, description: 'the variation the ledger recorded; null: the route default (the binding could not be evaluated)' }) recorded: string | null;
  @ApiProperty({ nullable: true, type: String }) variationId: string | null;
  @ApiProperty() name: string;
  @ApiProperty({ description: 'the control the differences are against' }) control: boolean;
  @ApiProperty({ description: 'completed requests (succeeded, failed, abandoned)' }) requests: number;
  @ApiProperty({ description: 'failed or abandoned' }) errors: number;
  @ApiProperty({ nullable: true, type: Number }) errorRate: number | null;
  @ApiProperty({ type: 'object', additionalProperties: { type: 'integer' }, description: 'errors per error code (abandoned rows: "abandoned")' }) errorsByCode: Record<string, number>;
  @ApiProperty() inputTokens: number;
  @ApiProperty() outputTokens: number;
  @ApiProperty({ description: 'micro-credits' }) debit: number;
  @ApiProperty({ nullable: true, type: Number, description: 'debit / requests' }) costPerRequest: number | null;
  @ApiProperty({ type: QuantilesDto }) latencyMs: QuantilesDto;
  @ApiProperty({ type: QuantilesDto, description: 'streams only' }) timeToFirstTokenMs: QuantilesDto;
  @ApiProperty({ type: FeedbackFiguresDto }) feedback: FeedbackFiguresDto;
  @ApiPropertyOptional({ type: VsControlDto }) vsControl?: VsControlDto;
}

export class MinimumsDto {
  @ApiProperty() requests: number;
  @ApiProperty() latencies: number;
  @ApiProperty() feedback: number;
}

export class SeriesPointDto {
  @ApiProperty({ description: 'bucket start' }) at: string;
  @ApiProperty({ nullable: true, type: String }) variationId: string | null;
  @ApiProperty({ nullable: true, type: String }) recorded: string | null;
  @ApiProperty() requests: number;
  @ApiProperty() errors: number;
  @ApiProperty() debit: number;
  @ApiProperty({ nullable: true, type: Number }) latencyP95Ms: number | null;
}

export class SeriesDto {
  @ApiProperty() bucketSeconds: number;
  @ApiProperty({ type: [SeriesPointDto] }) points: SeriesPointDto[];
}

export class ExperimentBindingDto {
  @ApiProperty() productKey: string;
  @ApiProperty({ nullable: true, type: String }) modelAlias: string | null;
  @ApiProperty({ description: 'true when the binding has a rollout plan (GET /api/gateway/bindings/{productKey}/rollout)' }) rolloutPlan: boolean;
}

export class ExperimentReportDto {
  @ApiProperty() flagKey: string;
  @ApiProperty({ nullable: true, type: String }) productKey: string | null;
  @ApiProperty() from: string;
  @ApiProperty() to: string;
  @ApiProperty({ nullable: true, type: String, description: "the flag's off variation in the environment, else its first" }) controlVariationId: string | null;
  @ApiProperty({ type: MinimumsDto, description: 'per-arm sample sizes below which a warning is given' }) minimums: MinimumsDto;
  @ApiProperty({ type: [ExperimentBindingDto], description: 'the gateway routes bound to this flag' }) bindings: ExperimentBindingDto[];
  @ApiProperty({ type: [VariationReportDto] }) variations: VariationReportDto[];
  @ApiProperty({ type: [String], description: 'samples too small, a missing control or flag' }) warnings: string[];
  @ApiProperty({ type: SeriesDto }) series: SeriesDto;
}
