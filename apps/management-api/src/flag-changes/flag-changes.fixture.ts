import type { TransactionRunner } from '@flagship/persistence';
import type { CallerContext } from '@flagship/service-kit';
import { flagServices } from '../flags/flag-services.fixture';
import { ChangeRequestsService } from './change-requests.service';
import { FakeFlagChangesRepository } from './flag-changes.repository.fake';
import { ScheduledChangesService } from './scheduled-changes.service';

export const BOB: CallerContext = { kind: 'user', callerId: 'user:bob', role: 'editor' };
export const CAROL_VIEWER: CallerContext = { kind: 'user', callerId: 'user:carol', role: 'viewer' };
export const CI_CLIENT: CallerContext = { kind: 'client', callerId: 'client:ci', scopes: ['flags:write'] };

/**
 * The change services over the flags' fixture (FlagsService on its fakes) and the in-memory change
 * repository, in one transaction runner that undoes both fakes' writes on a throw, as Postgres
 * undoes one transaction. `clock.now` is the services' time; move it to make schedules due.
 */
export function flagChangeServices() {
  const flags = flagServices();
  const changes = new FakeFlagChangesRepository();
  const transactions: Pick<TransactionRunner, 'run'> = { run: (work) => flags.repo.transactions.run((m) => changes.transactions.run(() => work(m))) };
  const clock = { now: new Date('2026-03-01T08:00:00Z') };
  const now = () => new Date(clock.now);
  const environments = {
    resolve: async (tenantId: string, requested: string | undefined) => requested ?? 'production',
    approvalRequired: async (tenantId: string) => [...(flags.approvals.get(tenantId) ?? [])],
  };
  const schedules = new ScheduledChangesService(transactions, changes, flags.service, environments, now);
  const requests = new ChangeRequestsService(transactions, changes, flags.service, environments, schedules, now);
  return { ...flags, changes, schedules, requests, clock };
}
