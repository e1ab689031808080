import { lazy, Suspense } from 'react';
import { Link } from 'wouter';
import { FlagSwitch } from '../components/FlagSwitch';
import { Playground } from '../components/Playground';
import { ErrorState, Loading } from '../components/States';
import { AuditLog } from '../components/targeting/AuditLog';
import { FlagEditor } from '../components/targeting/FlagEditor';
import { SavedWarnings } from '../components/targeting/Problems';
import { ChangeRequests } from '../components/governance/ChangeRequests';
import { ScheduledChanges } from '../components/governance/ScheduledChanges';
import { useEnvironments, useFlag } from '../queries';
import { useSignedIn } from '../session';

// recharts stays out of the initial JavaScript: the view loads with the first JSON flag opened.
const ExperimentView = lazy(() => import('../components/experiments/ExperimentView'));

/**
 * One flag: its on/off switch, the editor (settings, variations, targeting in the environment), its
 * change requests and scheduled changes, the playground, the experiment view of a JSON flag (a
 * gateway model binding's variations side by side, its rollout) and the audit log.
 */
export function FlagDetail({ flagKey }: { flagKey: string }) {
  const { scope } = useSignedIn();
  const q = useFlag(scope, flagKey);
  const approvalEnvironments = useEnvironments(scope).data?.filter((e) => e.requireApproval).map((e) => e.key);
  if (q.isPending) return <Loading what="the flag" />;
  if (q.isError) return <ErrorState error={q.error} onRetry={() => void q.refetch()} />;
  const flag = q.data;
  return (
    <article aria-labelledby="flag-title">
      <p>
        <Link href="/">← All flags</Link>
      </p>
      <div className="page-head">
        <h1 id="flag-title">{flag.name}</h1>
        <FlagSwitch flag={flag} scope={scope} />
      </div>
      <SavedWarnings what="flag" warnings={flag.warnings} />
      {/* Keyed by environment: another environment's targeting is another draft. */}
      <FlagEditor key={flag.environment} flag={flag} scope={scope} approvalEnvironments={approvalEnvironments} />
      <ChangeRequests flag={flag} scope={scope} />
      <ScheduledChanges flag={flag} scope={scope} />
      <Playground flag={flag} scope={scope} />
      {flag.type === 'json' && (
        <Suspense fallback={<Loading what="the experiment view" />}>
          <ExperimentView flagKey={flag.key} scope={scope} />
        </Suspense>
      )}
      <AuditLog flagKey={flag.key} version={flag.version} scope={scope} />
    </article>
  );
}
