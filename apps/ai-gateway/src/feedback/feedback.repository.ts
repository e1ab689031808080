import { Inject, Injectable } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { DATA_SOURCE } from '@flagship/persistence';
import type { Feedback } from './feedback';

/** Quality signals on requests (usage_feedback); every statement names the tenant. */
@Injectable()
export class FeedbackRepository {
  constructor(@Inject(DATA_SOURCE) private readonly ds: DataSource) {}

  /**
   * Records (or replaces) the feedback of one of the tenant's requests, by the gateway's request id
   * (`x-request-id` of its answer, usage_ledger.request_id); false when the tenant made no such
   * request (another tenant's id reads the same), and nothing is written.
   */
  async record(tenantId: string, clientId: string, f: Feedback): Promise<boolean> {
    const rows: unknown[] = await this.ds.query(
      `INSERT INTO usage_feedback (tenant_id, request_id, client_id, score, label)
       SELECT $1, $2, $3, $4, $5
        WHERE EXISTS (SELECT 1 FROM usage_ledger WHERE tenant_id = $1 AND request_id = $2)
       ON CONFLICT (tenant_id, request_id) DO UPDATE SET client_id = EXCLUDED.client_id, score = EXCLUDED.score, label = EXCLUDED.label, created_at = now()
       RETURNING request_id`,
      [tenantId, f.requestId, clientId, f.score, f.label],
    );
    return rows.length > 0;
  }
}
