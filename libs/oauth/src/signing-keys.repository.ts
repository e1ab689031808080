import { Inject, Injectable } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { DATA_SOURCE, withTransaction } from '@flagship/persistence';
import type { PrivateEcJwk, PublicEcJwk } from './jwk';

export interface PublishedKeyRow {
  kid: string;
  publicJwk: PublicEcJwk;
}

export interface GeneratedKeyRow extends PublishedKeyRow {
  privateJwk: PrivateEcJwk;
}

/** The generated key in use, with the end of its publication lease. */
export interface LeasedGeneratedKey extends GeneratedKeyRow {
  leaseEndsAt: Date;
}

/** Any 64-bit constant naming "the generated OAuth signing key"; only its uniqueness matters. */
const GENERATED_KEY_LOCK = 0x0a7b_5e1f_1a65;

/**
 * `signing_keys` (a global table: keys are the service's, not a tenant's). `retired_at` works as a
 * publication lease: the signer pushes it forward while it signs, and once it passes the key is no
 * longer published, so a key nobody signs with any more disappears by itself after its tokens expire.
 * NULL (a row put there by hand) means published until someone sets it.
 */
@Injectable()
export class SigningKeysRepository {
  constructor(@Inject(DATA_SOURCE) private readonly ds: DataSource) {}

  async published(): Promise<PublishedKeyRow[]> {
    const rows: Array<{ kid: string; public_jwk: PublicEcJwk }> = await this.ds.query(
      `SELECT kid, public_jwk FROM signing_keys
        WHERE alg = 'ES256' AND (retired_at IS NULL OR retired_at > now())
        ORDER BY created_at DESC, kid`,
    );
    return rows.map((r) => ({ kid: r.kid, publicJwk: r.public_jwk }));
  }

  /** A configured key (its private half stays in the secret): published, its lease renewed; answers the lease's end. */
  async upsertConfigured(key: PublishedKeyRow, leaseSeconds: number): Promise<Date> {
    const rows: Array<{ retired_at: Date }> = await this.ds.query(
      `INSERT INTO signing_keys (kid, alg, public_jwk, private_jwk, retired_at)
       VALUES ($1, 'ES256', $2::jsonb, NULL, now() + make_interval(secs => $3))
       ON CONFLICT (kid) DO UPDATE
         SET retired_at = GREATEST(COALESCE(signing_keys.retired_at, EXCLUDED.retired_at), EXCLUDED.retired_at)
       RETURNING retired_at`,
      [key.kid, JSON.stringify(key.publicJwk), leaseSeconds],
    );
    return rows[0]!.retired_at;
  }

  /**
   * The generated key every management-api process shares: the newest unexpired one, or `create()`'s
   * when there is none. An advisory lock serialises processes starting together, so they end with one.
   */
  async activeGeneratedOrCreate(create: () => GeneratedKeyRow, leaseSeconds: number): Promise<LeasedGeneratedKey> {
    return withTransaction(this.ds, async (m) => {
      await m.query('SELECT pg_advisory_xact_lock($1)', [GENERATED_KEY_LOCK]);
      const rows: Array<{ kid: string; public_jwk: PublicEcJwk; private_jwk: PrivateEcJwk }> = await m.query(
        `SELECT kid, public_jwk, private_jwk FROM signing_keys
          WHERE alg = 'ES256' AND private_jwk IS NOT NULL AND (retired_at IS NULL OR retired_at > now())
          ORDER BY created_at DESC LIMIT 1`,
      );
      if (rows.length > 0) {
        const row = rows[0];
        const [renewed]: [Array<{ retired_at: Date }>, number] = await m.query(
          `UPDATE signing_keys SET retired_at = now() + make_interval(secs => $2) WHERE kid = $1 RETURNING retired_at`,
          [row.kid, leaseSeconds],
        );
        return { kid: row.kid, publicJwk: row.public_jwk, privateJwk: row.private_jwk, leaseEndsAt: renewed[0]!.retired_at };
      }
      const key = create();
      const inserted: Array<{ retired_at: Date }> = await m.query(
        `INSERT INTO signing_keys (kid, alg, public_jwk, private_jwk, retired_at)
         VALUES ($1, 'ES256', $2::jsonb, $3::jsonb, now() + make_interval(secs => $4))
         RETURNING retired_at`,
        [key.kid, JSON.stringify(key.publicJwk), JSON.stringify(key.privateJwk), leaseSeconds],
      );
      return { ...key, leaseEndsAt: inserted[0]!.retired_at };
    });
  }

  /**
   * Pushes a generated key's lease forward. One someone retired (retired_at in the past) stays
   * retired: false tells the signer to pick another. (Configured keys are upserted instead: the
   * secret, not the table, decides which configured key signs.) Answers the lease's new end, or
   * undefined for a retired key.
   */
  async renewGenerated(kid: string, leaseSeconds: number): Promise<Date | undefined> {
    const [rows]: [Array<{ retired_at: Date }>, number] = await this.ds.query(
      `UPDATE signing_keys SET retired_at = now() + make_interval(secs => $2)
        WHERE kid = $1 AND private_jwk IS NOT NULL AND (retired_at IS NULL OR retired_at > now())
        RETURNING retired_at`,
      [kid, leaseSeconds],
    );
    return rows[0]?.retired_at;
  }
}
