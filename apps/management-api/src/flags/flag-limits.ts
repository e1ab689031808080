import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG } from '@flagship/config';
import type { MeasuredDefinition, Tx } from '@flagship/persistence';
import { validationProblem } from '@flagship/problem-details';
import type { ManagementApiConfig } from '../env.schema';
import { Quotas } from '../quotas/quotas';
import { sizeProblems } from './flag-rules';
import { addedBytes, largestAdditions } from './flag-size';
import { FlagsRepository } from './flags.repository';

/** What a flag write may add: flags (the count quota) and bytes (FLAG_MAX_BYTES per definition, the byte quota per tenant). */
@Injectable()
export class FlagLimits {
  readonly maxFlagBytes: number;

  constructor(
    @Inject(APP_CONFIG) config: Pick<ManagementApiConfig, 'FLAG_MAX_BYTES'>,
    private readonly repo: FlagsRepository,
    @Inject(Quotas) private readonly quotas: Pick<Quotas, 'reserve'>,
  ) {
    this.maxFlagBytes = config.FLAG_MAX_BYTES;
  }

  /** 409 quota-exceeded unless `adding` new flags fit; holds the tenant's turn until `m` ends. */
  reserveFlags(m: Tx, tenantId: string, adding = 1): Promise<void> {
    return this.quotas.reserve(m, 'flags-per-tenant', tenantId, adding);
  }

  /**
   * Measures the definitions this write left (every environment of these flags), refuses one it
   * grew past FLAG_MAX_BYTES (422 at `errorKey`), then counts what it added against the tenant's
   * byte quota (409, naming the `named` flags that add most, for a write of many). Inside the
   * write's transaction: a refusal writes nothing.
   */
  async boundSize(m: Tx, tenantId: string, flagIds: readonly string[], errorKey: (d: MeasuredDefinition) => string, named = 0): Promise<void> {
    const measured = await this.repo.measure(m, tenantId, flagIds);
    const errors = sizeProblems(measured, this.maxFlagBytes, errorKey);
    if (errors !== undefined) throw validationProblem(errors);
    await this.quotas.reserve(m, 'flag-bytes-per-tenant', tenantId, addedBytes(measured), { written: true, ...(named > 0 ? { adds: largestAdditions(measured, named) } : {}) });
  }
}
