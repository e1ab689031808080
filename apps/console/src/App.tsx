import { MutationCache, QueryCache, QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { useEffect, useState, type ReactNode } from 'react';
import { Button } from 'react-aria-components';
import { Link, Route, Router, Switch } from 'wouter';
import { isApiError } from './api';
import { ChoiceSelect } from './components/ChoiceSelect';
import { CreateFlag } from './pages/CreateFlag';
import { FlagDetail } from './pages/FlagDetail';
import { Flags } from './pages/Flags';
import { SignIn } from './pages/SignIn';
import { useEnvironments } from './queries';
import { SessionProvider, useSession, useSignedIn } from './session';

const EXPIRED = 'Your session has ended. Sign in again to continue.';

/**
 * Server state for the whole console. A 401 on any signed-in request ends the session (back to
 * sign-in, with a notice); a 429 is retried once after the advertised Retry-After; other client
 * errors are shown at once, not retried.
 */
export function createQueryClient(onUnauthorized: () => void): QueryClient {
  const on401 = (e: unknown) => {
    if (isApiError(e) && e.status === 401) onUnauthorized();
  };
  return new QueryClient({
    queryCache: new QueryCache({ onError: on401 }),
    mutationCache: new MutationCache({ onError: on401 }),
    defaultOptions: {
      queries: {
        retry: (count, e) => (isApiError(e) ? (e.status === 429 || e.status >= 500 || e.status === 0) && count < 1 : false),
        retryDelay: (_c, e) => (isApiError(e) && e.retryAfterSeconds ? Math.min(e.retryAfterSeconds, 30) * 1000 : 1000),
        refetchOnWindowFocus: false,
      },
    },
  });
}

function Switchers() {
  const { tenants, tenantId, environment, scope } = useSignedIn();
  const { setTenant, setEnvironment } = useSession();
  const envs = useEnvironments(scope);
  const envOptions = envs.data?.map((e) => ({ id: e.key, name: e.name })) ?? [{ id: environment, name: environment }];
  return (
    <div className="switchers">
      <ChoiceSelect label="Tenant" value={tenantId} options={tenants.map((t) => ({ id: t.tenant_id, name: `${t.tenant_name} (${t.role})` }))} onChange={setTenant} />
      <ChoiceSelect label="Environment" value={environment} options={envOptions} onChange={setEnvironment} />
    </div>
  );
}

function Shell({ children }: { children: ReactNode }) {
  const { session, signOut } = useSession();
  return (
    <>
      <a href="#main" className="skip-link">
        Skip to content
      </a>
      <header className="topbar">
        <Link href="/" className="brand">
          Flagship
        </Link>
        <nav aria-label="Main">
          <Link href="/">Flags</Link>
          <Link href="/flags/new">Create flag</Link>
        </nav>
        <Switchers />
        <span className="muted who">{session?.email}</span>
        <Button onPress={() => signOut()}>Sign out</Button>
      </header>
      <main id="main">{children}</main>
    </>
  );
}

function Routes() {
  const { session } = useSession();
  if (!session) return <SignIn />;
  return (
    <Shell>
      <Switch>
        <Route path="/">
          <Flags />
        </Route>
        <Route path="/flags/new">
          <CreateFlag />
        </Route>
        <Route path="/flags/:key">{(p) => <FlagDetail key={p.key} flagKey={decodeURIComponent(p.key)} />}</Route>
        <Route>
          <p role="alert">This page does not exist.</p>
        </Route>
      </Switch>
    </Shell>
  );
}

function WithQueries({ children }: { children: ReactNode }) {
  const { session, signOut } = useSession();
  const [client] = useState(() => createQueryClient(() => signOut(EXPIRED)));
  // Nothing one user saw stays cached for the next.
  useEffect(() => {
    if (!session) client.clear();
  }, [session, client]);
  return <QueryClientProvider client={client}>{children}</QueryClientProvider>;
}

export function App() {
  return (
    <SessionProvider>
      <WithQueries>
        <Router base="/console">
          <Routes />
        </Router>
      </WithQueries>
    </SessionProvider>
  );
}
