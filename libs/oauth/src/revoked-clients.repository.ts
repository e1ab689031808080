import { Inject, Injectable } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { DATA_SOURCE } from '@flagship/persistence';

export interface DeletedClientRow {
  clientId: string;
  deletedAt: Date;
}

/** Deleted OAuth clients, read by every verifier as the fallback of the revocation set in Redis. */
@Injectable()
export class RevokedClientsRepository {
  constructor(@Inject(DATA_SOURCE) private readonly ds: DataSource) {}

  /**
   * Clients deleted within the last `withinSeconds`, of every tenant. Deliberately not tenant-scoped:
   * a verifier must refuse a deleted client's tokens whatever tenant they name, and client ids are
   * globally unique. Only ids and times leave the table.
   */
  async deletedWithin(withinSeconds: number): Promise<DeletedClientRow[]> {
    const rows: Array<{ client_id: string; deleted_at: Date }> = await this.ds.query(
      `SELECT client_id, deleted_at FROM oauth_clients
        WHERE deleted_at IS NOT NULL AND deleted_at > now() - make_interval(secs => $1)`,
      [withinSeconds],
    );
    return rows.map((r) => ({ clientId: r.client_id, deletedAt: r.deleted_at }));
  }
}
