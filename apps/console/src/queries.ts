import { useQuery } from '@tanstack/react-query';
import { request, type Environment, type Flag, type RequestScope } from './api';

export function useFlags(scope: RequestScope) {
  return useQuery({
    queryKey: ['flags', scope.tenantId, scope.environment],
    // One page of up to 1000 (the API's largest): the list filters client-side as the user types.
    queryFn: async () => (await request<Flag[]>('GET', '/api/flags?limit=1000', scope)).body,
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
