import { Global, Module } from '@nestjs/common';
import { DomainEvents } from './domain-events';
import { WebhooksController } from './webhooks.controller';
import { SqlWebhooksRepository, WebhooksRepository } from './webhooks.repository';
import { WebhooksService } from './webhooks.service';

/** Global for DomainEvents: every feature whose changes a webhook may hear records them through it. */
@Global()
@Module({
  controllers: [WebhooksController],
  providers: [{ provide: WebhooksRepository, useClass: SqlWebhooksRepository }, WebhooksService, DomainEvents],
  exports: [DomainEvents],
})
export class WebhooksModule {}
