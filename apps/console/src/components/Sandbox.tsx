import { Link } from 'wouter';
import { useSignedIn } from '../session';
import { useSandbox, useSandboxDetails } from '../tenant-queries';
import { ErrorState, Loading } from './States';

const DAY = 86_400_000;

/** Shown on every screen of a sandbox tenant: until when it runs, or that it is read-only now. */
export function SandboxBanner() {
  const { scope } = useSignedIn();
  const { isSandbox, status } = useSandbox(scope);
  if (!isSandbox || !status.data) return null;
  const expires = new Date(status.data.expiresAt);
  if (!status.data.active) {
    return (
      <div className="banner expired" role="region" aria-label="Sandbox">
        <strong>This sandbox expired on {expires.toLocaleString()}.</strong> It is read-only now: you can look at its flags and data, but changes are
        disabled. Create a new tenant to keep working.
      </div>
    );
  }
  const days = Math.max(0, Math.ceil((expires.getTime() - Date.now()) / DAY));
  return (
    <div className="banner" role="region" aria-label="Sandbox">
      <strong>Sandbox</strong>: expires on {expires.toLocaleString()} ({days} {days === 1 ? 'day' : 'days'} left). <Link href="/sandbox">Demo data and usage</Link>
    </div>
  );
}

export function SandboxPage() {
  const { scope } = useSignedIn();
  const { isSandbox, status } = useSandbox(scope);
  const { indicators, demo } = useSandboxDetails(scope, isSandbox);
  return (
    <section aria-labelledby="sandbox-title">
      <h1 id="sandbox-title">Sandbox</h1>
      {!isSandbox && <p className="state empty">This tenant is not a sandbox.</p>}
      {status.isPending && isSandbox && <Loading what="sandbox" />}
      {status.error && <ErrorState error={status.error} />}
      {status.data && (
        <dl className="settings">
          <dt>State</dt>
          <dd data-testid="sandbox-state">{status.data.active ? 'active' : 'expired (read-only)'}</dd>
          <dt>Expires</dt>
          <dd>{new Date(status.data.expiresAt).toLocaleString()}</dd>
          {indicators.data && (
            <>
              <dt>Flags evaluated</dt>
              <dd data-testid="sandbox-flags-used">{indicators.data.flagsUsed}</dd>
              <dt>Evaluations</dt>
              <dd data-testid="sandbox-evaluations">{indicators.data.evaluations}</dd>
            </>
          )}
        </dl>
      )}
      {indicators.error && <ErrorState error={indicators.error} />}
      {demo.error && <ErrorState error={demo.error} />}
      {demo.data && (
        <div className="panel">
          <h2>Demo data</h2>
          <p className="muted">Open a demo flag and try its playground with one of the demo users as the context key.</p>
          <h3>Demo flags</h3>
          <ul>
            {demo.data.flags.map((f) => (
              <li key={f}>
                <Link href={`/flags/${encodeURIComponent(f)}`}>{f}</Link>
              </li>
            ))}
          </ul>
          <h3>Demo users</h3>
          <ul>
            {demo.data.users.map((u) => (
              <li key={u}>
                <code>{u}</code>
              </li>
            ))}
          </ul>
        </div>
      )}
    </section>
  );
}
