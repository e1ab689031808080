import type { Backlog } from '@flagship/ledger';
import type { Tx } from '@flagship/persistence';
import { type StoredEvent, StripeEventsRepository } from './stripe-events.repository';

export interface FakeInboxRow extends StoredEvent {
  source: 'webhook' | 'catch_up';
  stripeCreated: number;
  receivedAt: number;
  nextAttemptAt: number;
  lastError: string | null;
  processedAt: number | null;
}

/**
 * In-memory twin of SqlStripeEventsRepository for unit tests: the inbox's rows by event id and a
 * clock (`now`, ms) a test moves on; each store arrives 1 ms after the one before. Nothing is
 * locked: a unit test runs one claim at a time.
 */
export class FakeStripeEventsRepository extends StripeEventsRepository {
  readonly rows = new Map<string, FakeInboxRow>();
  now = Date.parse('2026-01-01T00:00:00Z');

  async store(event: { id: string; type: string; created: number }, source: 'webhook' | 'catch_up'): Promise<boolean> {
    if (this.rows.has(event.id)) return false;
    const receivedAt = this.now++;
    // Stored as JSON, as the real one's jsonb column holds it.
    const payload = JSON.parse(JSON.stringify(event)) as StoredEvent['payload'];
    this.rows.set(event.id, { id: event.id, type: event.type, payload, attempts: 0, source, stripeCreated: event.created, receivedAt, nextAttemptAt: receivedAt, lastError: null, processedAt: null });
    return true;
  }

  async claimNext(): Promise<StoredEvent | null> {
    const due = [...this.rows.values()]
      .filter((r) => r.processedAt === null && r.nextAttemptAt <= this.now)
      .sort((a, b) => a.stripeCreated - b.stripeCreated || a.receivedAt - b.receivedAt)[0];
    return due ? { id: due.id, type: due.type, payload: due.payload, attempts: due.attempts } : null;
  }

  async markProcessed(_m: Tx, id: string, note: string | null = null): Promise<void> {
    const r = this.rows.get(id);
    if (r) Object.assign(r, { processedAt: this.now, attempts: r.attempts + 1, lastError: note });
  }

  async recordFailure(id: string, error: string, retryInMs: number): Promise<void> {
    const r = this.rows.get(id);
    if (r && r.processedAt === null) Object.assign(r, { attempts: r.attempts + 1, lastError: error.slice(0, 500), nextAttemptAt: this.now + retryInMs });
  }

  async inboxBacklog(): Promise<Backlog> {
    const waiting = [...this.rows.values()].filter((r) => r.processedAt === null);
    const oldest = Math.min(...waiting.map((r) => r.receivedAt));
    return { rows: waiting.length, oldestAgeSeconds: waiting.length ? (this.now - oldest) / 1000 : 0 };
  }
}
