import { HttpStatus } from '@nestjs/common';
import { ProblemException, registerProblemTypes } from '@flagship/problem-details';
import { Admission, type AdmissionBound } from '@flagship/sse';

export const UsageExportProblems = registerProblemTypes({
  'too-many-exports': { status: HttpStatus.TOO_MANY_REQUESTS, title: 'As many usage exports are under way as this tenant or caller may run' },
  'exports-full': { status: HttpStatus.SERVICE_UNAVAILABLE, title: 'This server runs as many usage exports as it may' },
});

/** USAGE_EXPORTS_* in env.schema.ts: downloads one process serves at once. */
export interface UsageExportLimits {
  perTenant: number;
  /** One person or OAuth client across every tenant (tenants are free to create). */
  perCaller: number;
  perProcess: number;
}

export interface RunningExport {
  tenantId: string;
  /** `user:<id>` or `client:<id>`. */
  callerId: string;
}

type ExportBound = 'tenant' | 'caller' | 'process';

/** A download is seconds to minutes of the ledger's pages; a slot frees up when one finishes. */
const RETRY_AFTER_S = 30;

/**
 * Who may start one more usage export on this process. An export reads the ledger a page at a
 * time for as long as its client reads, so a tenant (or one person across many free tenants) opening
 * downloads it never reads would otherwise hold the ledger's reads and this process's memory for every
 * other tenant. Counted from admission, before the first await, so concurrent starts cannot all pass.
 */
export class UsageExportAdmission {
  private readonly admission: Admission<RunningExport>;

  constructor(limits: UsageExportLimits) {
    const bounds: Array<AdmissionBound<RunningExport> & { name: ExportBound }> = [
      { name: 'tenant', key: (e) => e.tenantId, limit: () => limits.perTenant },
      { name: 'caller', key: (e) => e.callerId, limit: () => limits.perCaller },
      { name: 'process', key: () => '', limit: () => limits.perProcess },
    ];
    this.admission = new Admission(bounds);
  }

  /** Admits `e`, or throws 429 (tenant, caller) or 503 (process) with Retry-After. Release it when its download ends. */
  admit(e: RunningExport): void {
    const decision = this.admission.admit(e);
    if (decision.admitted) return;
    const bound = decision.bound as ExportBound;
    if (bound === 'process') {
      throw new ProblemException(UsageExportProblems['exports-full'], `This server runs ${decision.limit} usage exports, as many as it may; retry, another replica may take it.`, {}, { 'Retry-After': String(RETRY_AFTER_S) });
    }
    const who = bound === 'tenant' ? 'This tenant runs' : 'You run';
    throw new ProblemException(
      UsageExportProblems['too-many-exports'],
      `${who} ${decision.limit} usage exports on this server, the most ${bound === 'tenant' ? 'a tenant' : 'one caller'} may; retry when one has finished.`,
      { limit: decision.limit, per: bound },
      { 'Retry-After': String(RETRY_AFTER_S) },
    );
  }

  release(e: RunningExport): void {
    this.admission.release(e);
  }

  get running(): number {
    return this.admission.size;
  }
}
