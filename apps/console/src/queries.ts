import { useQuery } from '@tanstack/react-query';
import { request, requestAll, type Environment, type Flag, type RequestScope, type Segment } from './api';

export function useFlags(scope: RequestScope) {
  return useQuery({
    queryKey: ['flags', scope.tenantId, scope.environment],
    // One page of up to 1000 (the API's largest): the list filters client-side as the user types.
    queryFn: async () => (await request<Flag[]>('GET', '/api/flags?limit=1000', scope)).body,
  });
}

export type FlagLifecycle = 'stale' | 'active';

/**
 * The keys of the environment's flags in one lifecycle (stale or active over `days`), decided by the
 * server, which alone knows both when each flag was last evaluated and since when it serves one value.
 * Only the keys are used: the rows shown stay those of useFlags, which the switches keep current.
 */
export function useFlagKeysIn(scope: RequestScope, lifecycle: FlagLifecycle | null, days: number) {
  return useQuery({
    enabled: lifecycle !== null,
    // Under the list's key: whatever refreshes the list (a created flag, a 412) refreshes this too.
    queryKey: ['flags', scope.tenantId, scope.environment, 'lifecycle', lifecycle, days],
    queryFn: async () => new Set((await request<Flag[]>('GET', `/api/flags?limit=1000&lifecycle=${lifecycle}&staleAfterDays=${days}`, scope)).body.map((f) => f.key)),
  });
}

export function useFlag(scope: RequestScope, key: string) {
  return useQuery({
    queryKey: ['flag', scope.tenantId, scope.environment, key],
    queryFn: async () => (await request<Flag>('GET', `/api/flags/${encodeURIComponent(key)}`, scope)).body,
  });
}

export function useEnvironments(scope: RequestScope) {
  return useQuery({
    queryKey: ['environments', scope.tenantId],
    queryFn: async () => (await request<Environment[]>('GET', '/api/environments', { ...scope, environment: undefined })).body,
    staleTime: 60_000,
  });
}

/** The environment's segments, every page (a tenant holds at most its segment quota). */
export function useSegments(scope: RequestScope, enabled = true) {
  return useQuery({
    enabled,
    queryKey: ['segments', scope.tenantId, scope.environment],
    queryFn: () => requestAll<Segment>('/api/segments?limit=1000', scope),
  });
}

/** One segment and its ETag, the version a PATCH or DELETE sends back as If-Match. */
export function useSegment(scope: RequestScope, key: string) {
  return useQuery({
    queryKey: ['segment', scope.tenantId, scope.environment, key],
    queryFn: async () => {
      const r = await request<Segment>('GET', `/api/segments/${encodeURIComponent(key)}`, scope);
      return { segment: r.body, etag: r.etag ?? `"${r.body.version}"` };
    },
  });
}
