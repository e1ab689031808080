import { useMutation, useQueryClient } from '@tanstack/react-query';
import { Switch } from 'react-aria-components';
import { etagOfFlag, isApiError, request, type Flag, type RequestScope } from '../api';
import { ErrorState } from './States';
import { useReadOnly } from '../read-only';

/**
 * A flag's on/off switch in one environment: PATCH with If-Match, so a change made elsewhere since
 * the flag was read is a 412 that the user sees, never silently overwritten.
 */
export function FlagSwitch({ flag, scope }: { flag: Flag; scope: RequestScope }) {
  const readOnly = useReadOnly();
  const qc = useQueryClient();
  const environment = flag.environment;
  const m = useMutation({
    mutationFn: async (enabled: boolean) =>
      (await request<Flag>('PATCH', `/api/flags/${encodeURIComponent(flag.key)}`, { ...scope, environment }, { enabled }, { 'If-Match': etagOfFlag(flag) })).body,
    onSuccess: (updated) => {
      qc.setQueryData(['flag', scope.tenantId, environment, flag.key], updated);
      qc.setQueryData<Flag[]>(['flags', scope.tenantId, environment], (list) => list?.map((f) => (f.key === updated.key ? updated : f)));
    },
    onError: (e) => {
      // Someone else changed the flag: show it as it is now.
      if (isApiError(e) && e.status === 412) void qc.invalidateQueries({ queryKey: ['flags', scope.tenantId, environment] });
    },
  });
  const on = m.isPending && m.variables !== undefined ? m.variables : flag.enabled;
  return (
    <div className="flag-switch">
      <Switch aria-label={`Enabled in ${environment}`} isSelected={on} isDisabled={m.isPending || readOnly !== null} onChange={(v) => m.mutate(v)}>
        <div className="indicator" aria-hidden="true" />
        <span aria-hidden="true">{on ? 'On' : 'Off'}</span>
      </Switch>
      {m.error && (
        <ErrorState
          error={m.error}
          hint={isApiError(m.error) && m.error.status === 412 ? 'The flag changed since this page read it; it now shows the current state. Switch again to apply your change.' : undefined}
        />
      )}
    </div>
  );
}
