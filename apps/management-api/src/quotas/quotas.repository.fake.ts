import type { Tx } from '@flagship/persistence';
import type { QuotaName } from './quotas';
import { QuotasRepository } from './quotas.repository';

/**
 * In-memory twin of QuotasRepository for service unit tests: each quota's count comes from the
 * fake store that holds what it counts (`counts[quota](ownerId)`); a quota with none counts 0.
 * There is no lock to take: a unit test runs one write at a time.
 */
export class FakeQuotasRepository extends QuotasRepository {
  constructor(private readonly counts: Partial<Record<QuotaName, (ownerId: string) => number>> = {}) {
    super(undefined as never);
  }

  override async lockAndCount(_m: Tx, quota: QuotaName, ownerId: string): Promise<number> {
    return this.counts[quota]?.(ownerId) ?? 0;
  }
}
