/** The event types a webhook may subscribe to (CONTRACT.md section 10). */
export const WEBHOOK_EVENT_TYPES = [
  'flag.created',
  'flag.updated',
  'flag.deleted',
  'segment.updated',
  'environment.updated',
  'member.updated',
  'credits.low',
  'budget.exceeded',
] as const;

export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** A change as a webhook receiver sees it: `data` becomes the body's `data`. */
export interface DomainEvent {
  type: WebhookEventType;
  data: Record<string, unknown>;
}
