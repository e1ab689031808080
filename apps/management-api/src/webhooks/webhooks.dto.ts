import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsIn, IsOptional, IsString, MaxLength } from 'class-validator';
import { WEBHOOK_EVENT_TYPES } from './webhook-events';

export class CreateWebhookDto {
  @ApiProperty({ example: 'https://hooks.example.com/flagship', maxLength: 2048, description: 'https only in production; it must resolve to public addresses when each delivery is sent' })
  @IsString()
  @MaxLength(2048)
  url!: string;

  @ApiProperty({ enum: WEBHOOK_EVENT_TYPES, isArray: true, minItems: 1, maxItems: WEBHOOK_EVENT_TYPES.length })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(WEBHOOK_EVENT_TYPES.length)
  @IsIn(WEBHOOK_EVENT_TYPES, { each: true, message: `each event must be one of ${WEBHOOK_EVENT_TYPES.join(', ')}` })
  events!: string[];

  @ApiPropertyOptional({ maxLength: 500, example: 'Slack relay' })
  @IsOptional()
  @IsString()
  @MaxLength(500)
  description?: string;
}

export class WebhookDto {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty() url!: string;
  @ApiProperty() description!: string;
  @ApiProperty({ enum: WEBHOOK_EVENT_TYPES, isArray: true }) events!: string[];
  @ApiProperty({ description: 'false once a receiver failed for a day (see disabledReason)' }) enabled!: boolean;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) disabledAt!: string | null;
  @ApiProperty({ type: String, nullable: true }) disabledReason!: string | null;
  @ApiProperty({ description: 'events not queued because 10000 deliveries were already waiting for this receiver' }) droppedEvents!: number;
  @ApiProperty({ type: String, nullable: true, description: 'the user who created it' }) createdBy!: string | null;
  @ApiProperty({ format: 'date-time' }) createdAt!: string;
}

export class WebhookWithSecretDto extends WebhookDto {
  @ApiProperty({ description: 'the Standard Webhooks signing secret, shown this once', example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' })
  secret!: string;
}

export class WebhookAttemptDto {
  @ApiProperty() attempt!: number;
  @ApiProperty({ format: 'date-time' }) attemptedAt!: string;
  @ApiProperty({ enum: ['delivered', 'failed', 'refused'], description: 'refused: the URL did not resolve to allowed addresses, nothing was sent' }) outcome!: string;
  @ApiProperty({ type: Number, nullable: true }) responseCode!: number | null;
  @ApiProperty() durationMs!: number;
  @ApiProperty({ type: String, nullable: true }) error!: string | null;
}

export class WebhookDeliveryDto {
  @ApiProperty({ format: 'uuid', description: 'the webhook-id header of every attempt' }) id!: string;
  @ApiProperty({ enum: WEBHOOK_EVENT_TYPES }) type!: string;
  @ApiProperty({ description: 'the body sent: {type, timestamp, data}', type: 'object', additionalProperties: true }) payload!: unknown;
  @ApiProperty({ enum: ['pending', 'delivered', 'failed'] }) status!: string;
  @ApiProperty({ type: [WebhookAttemptDto] }) attempts!: WebhookAttemptDto[];
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) nextAttemptAt!: string | null;
  @ApiProperty({ format: 'date-time' }) createdAt!: string;
}
