import type { DomainEvent } from '../webhooks/webhook-events';
import type { StoredFlag } from '@flagship/flag-store';
import { ProblemException } from '@flagship/problem-details';
import type { CallerContext } from '@flagship/service-kit';
import { EnvironmentProblems } from '../environments/environments.errors';
import { ProjectProblems } from '../projects/projects.errors';
import { Quotas } from '../quotas/quotas';
import { FakeQuotasRepository } from '../quotas/quotas.repository.fake';
import { FakeSegmentsRepository } from '../segments/segments.repository.fake';
import { SegmentsService } from '../segments/segments.service';
import { FlagImportService } from './flag-import.service';
import { FlagLimits } from './flag-limits';
import { FakeFlagsRepository } from './flags.repository.fake';
import { FlagsService } from './flags.service';

export const TENANT = '00000000-0000-4000-8000-0000000000a1';
export const OTHER_TENANT = '00000000-0000-4000-8000-0000000000b2';
export const PROJECT = '00000000-0000-4000-8000-0000000000c3';
export const ENVIRONMENTS = ['development', 'production', 'staging'];
export const ALICE: CallerContext = { kind: 'user', callerId: 'user:alice' };

/** A change announced (FlagEvents.changed), as the service called it. */
export interface Announced {
  tenantId: string;
  environments: string[];
  flagKey: string;
  version: number;
}

export interface FlagLimitSettings {
  FLAG_MAX_BYTES: number;
  QUOTA_FLAGS_PER_TENANT: number;
  QUOTA_FLAG_BYTES_PER_TENANT: number;
  QUOTA_SEGMENTS_PER_TENANT: number;
}

/**
 * FlagsService, FlagImportService and the SegmentsService an import writes through, over the
 * in-memory repositories (`segments` beside `repo`, an import's transaction spanning both), with the real Quotas and
 * FlagLimits over it (the quota counts are the fake's), and small stand-ins for the environments
 * (ENVIRONMENTS in both tenants), projects (PROJECT in TENANT), the flag store and the change events
 * (recorded in `announced`). No I/O.
 */
export function flagServices(settings: Partial<FlagLimitSettings> = {}) {
  const limits: FlagLimitSettings = { FLAG_MAX_BYTES: 32_768, QUOTA_FLAGS_PER_TENANT: 5000, QUOTA_FLAG_BYTES_PER_TENANT: 8_388_608, QUOTA_SEGMENTS_PER_TENANT: 500, ...settings };
  const repo = new FakeFlagsRepository();
  const segments = new FakeSegmentsRepository();
  for (const t of [TENANT, OTHER_TENANT]) repo.environments.set(t, [...ENVIRONMENTS]);
  const quotas = new Quotas(
    {
      QUOTA_FLAGS_PER_TENANT: limits.QUOTA_FLAGS_PER_TENANT,
      QUOTA_FLAG_BYTES_PER_TENANT: limits.QUOTA_FLAG_BYTES_PER_TENANT,
      QUOTA_SEGMENTS_PER_TENANT: limits.QUOTA_SEGMENTS_PER_TENANT,
      QUOTA_SEGMENT_BYTES_PER_TENANT: 8_388_608,
      QUOTA_ENVIRONMENTS_PER_TENANT: 20,
      QUOTA_GATEWAY_BINDINGS_PER_TENANT: 20,
      QUOTA_OAUTH_CLIENTS_PER_TENANT: 50,
      QUOTA_WEBHOOKS_PER_TENANT: 20,
      QUOTA_TENANTS_PER_USER: 10,
      QUOTA_BUDGETS_PER_TENANT: 50,
      QUOTA_INVITATIONS_PER_TENANT: 100,
    },
    new FakeQuotasRepository({
      'flags-per-tenant': (t) => repo.countFlags(t),
      'flag-bytes-per-tenant': (t) => repo.countBytes(t),
      'segments-per-tenant': (t) => segments.countSegments(t),
      'segment-bytes-per-tenant': (t) => segments.countBytes(t),
    }),
    repo.transactions,
  );
  const flagLimits = new FlagLimits({ FLAG_MAX_BYTES: limits.FLAG_MAX_BYTES }, repo, quotas);
  const announced: Announced[] = [];
  /** Segment changes announced: [tenant, environment, key, version]. */
  const announcedSegments: Array<[string, string, string, number]> = [];
  const events = {
    segmentChanged: async (t: string, e: string, k: string, v: number) => void announcedSegments.push([t, e, k, v]),
    changed: async (tenantId: string, environments: string[], flagKey: string, version: number) => void announced.push({ tenantId, environments, flagKey, version }),
    changedMany: async (tenantId: string, changes: ReadonlyArray<{ environments: string[]; flagKey: string; version: number }>) => {
      for (const c of changes) announced.push({ tenantId, ...c });
    },
  };
  /** tenant id -> its environments that require approval (environments.require_approval). */
  const approvals = new Map<string, string[]>();
  const environments = {
    approvalRequired: async (tenantId: string) => [...(approvals.get(tenantId) ?? [])],
    resolve: async (tenantId: string, requested: string | undefined) => {
      const key = requested === undefined || requested === '' ? 'production' : requested;
      if (!repo.environments.get(tenantId)?.includes(key)) throw new ProblemException(EnvironmentProblems['environment-not-found'], `No environment "${key}" in this tenant.`);
      return key;
    },
  };
  const projects = {
    exists: async (tenantId: string, id: string) => tenantId === TENANT && id === PROJECT,
    found: async (tenantId: string, id: string) => {
      if (tenantId !== TENANT || id !== PROJECT) throw new ProblemException(ProjectProblems['project-not-found'], `No project ${id} in this tenant.`);
      const at = new Date(0);
      return { project: { tenantId, id, name: 'Shop', description: '', color: '#000000', createdAt: at, updatedAt: at }, flagCount: 0 };
    },
  };
  const store = {
    servedSegments: async () => [],
    served: async (tenantId: string, environment: string): Promise<StoredFlag[]> =>
      (await repo.definitions(tenantId, environment)).map((definition) => ({ key: definition.key, projectId: null, fingerprint: String(definition.version), definition })),
  };
  // The environment's segments (segmentMatch must name one) are `segments`, seeded by the specs that use them.
  // What webhooks would hear: the events each write recorded in its transaction.
  const recorded: DomainEvent[] = [];
  const domainEvents = { record: async (_m: unknown, _tenantId: string, ...e: DomainEvent[]) => void recorded.push(...e) };
  const service = new FlagsService(repo.transactions, repo, projects, environments, store, events, flagLimits, segments, domainEvents, { STALE_AFTER_DAYS: 30 });
  service.now = () => repo.now();
  const segmentService = new SegmentsService(segments.transactions, segments, environments, quotas, events, { SEGMENT_MAX_BYTES: 524_288, SEGMENT_MAX_KEYS: 10_000 }, domainEvents);
  // One transaction over both fakes, as Postgres holds both tables: a throw undoes what either wrote.
  const both = { run: <T>(work: Parameters<typeof repo.transactions.run<T>>[0]) => repo.transactions.run((m) => segments.transactions.run(() => work(m))) };
  const imports = new FlagImportService(both, repo, environments, events, flagLimits, segmentService, domainEvents);
  return { repo, segments, service, imports, announced, announcedSegments, approvals, recorded };
}
