import { MutationCache, QueryCache, QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { lazy, Suspense, useEffect, useRef, useState, type ReactNode } from 'react';
import { Button } from 'react-aria-components';
import { Link, Route, Router, Switch, useLocation } from 'wouter';
import { isApiError } from './api';
import { ChoiceSelect } from './components/ChoiceSelect';
import { PendingInvitations } from './components/Invitations';
import { DisabledWebhooksBanner } from './components/DisabledWebhooks';
import { SandboxBanner, SandboxPage } from './components/Sandbox';
import { Loading } from './components/States';
import { Tour } from './components/Tour';
import { CreateFlag } from './pages/CreateFlag';
import { FlagDetail } from './pages/FlagDetail';
import { Flags } from './pages/Flags';
import { Environments } from './pages/Environments';
import { Approvals } from './pages/Approvals';
import { OAuthClients } from './pages/OAuthClients';
import { Projects } from './pages/Projects';
import { SIGN_IN_CONFIG_KEY } from './oidc';
import { OidcCallback, SignIn } from './pages/SignIn';
import { Team } from './pages/Team';
import { ReadOnlyContext, useReadOnly } from './read-only';
import { useSandbox } from './tenant-queries';
import { useEnvironments } from './queries';
import { SessionProvider, useSession, useSignedIn } from './session';

// Usage (with recharts) and billing load on demand: the initial JavaScript stays within its budget.
const Usage = lazy(() => import('./pages/Usage'));
const Billing = lazy(() => import('./pages/Billing'));
// So do the segment pages (their editor shares the flag editor's parts, already loaded).
const Segments = lazy(() => import('./pages/Segments').then((m) => ({ default: m.Segments })));
// And webhooks, an admin's page.
const Webhooks = lazy(() => import('./pages/Webhooks').then((m) => ({ default: m.Webhooks })));
const SegmentDetail = lazy(() => import('./pages/Segments').then((m) => ({ default: m.SegmentDetail })));

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

/** A main-navigation link that says which page is open (aria-current), for screen readers and the eye alike. */
function NavLink({ href, children }: { href: string; children: ReactNode }) {
  const [location] = useLocation();
  const current = href === '/' ? location === '/' || (location.startsWith('/flags/') && location !== '/flags/new') : location === href || location.startsWith(`${href}/`);
  return (
    <Link href={href} aria-current={current ? 'page' : undefined}>
      {children}
    </Link>
  );
}

/** Whether the active tenant is a sandbox, and the reason it is read-only (expired), or null. */
function useTenantSandbox(): { isSandbox: boolean; readOnly: string | null } {
  const { scope } = useSignedIn();
  const { isSandbox, status } = useSandbox(scope);
  return { isSandbox, readOnly: isSandbox && status.data && !status.data.active ? 'This sandbox has expired: it is read-only.' : null };
}

/**
 * Pages that do not read useReadOnly() themselves (flag creation and detail) get their controls disabled by a
 * disabled fieldset while the tenant is read-only: native controls, and react-aria's, which render
 * native ones, cannot be used inside it.
 */
function ReadOnlyScope({ children }: { children: ReactNode }) {
  const readOnly = useReadOnly();
  if (!readOnly) return <>{children}</>;
  return (
    <fieldset disabled className="read-only">
      <legend className="visually-hidden">{readOnly}</legend>
      {children}
    </fieldset>
  );
}

function Shell({ children }: { children: ReactNode }) {
  const { session, signOut } = useSession();
  const { isSandbox, readOnly } = useTenantSandbox();
  // Webhooks are an admin's tool: others reaching the page by its URL are told so there.
  const { tenants, tenantId } = useSignedIn();
  const isAdmin = tenants.find((t) => t.tenant_id === tenantId)?.role === 'admin';
  return (
    <>
      <a href="#main" className="skip-link">
        Skip to content
      </a>
      <header className="topbar">
        <Link href="/" className="brand">
          Flagship
        </Link>
        <Switchers />
        <span className="muted who">{session?.email}</span>
        <Button onPress={() => signOut()}>Sign out</Button>
      </header>
      <nav aria-label="Main" className="mainnav">
        <NavLink href="/">Flags</NavLink>
        <NavLink href="/segments">Segments</NavLink>
        <NavLink href="/approvals">Approvals</NavLink>
        <NavLink href="/flags/new">Create flag</NavLink>
        <NavLink href="/projects">Projects</NavLink>
        <NavLink href="/environments">Environments</NavLink>
        <NavLink href="/team">Team</NavLink>
        <NavLink href="/oauth-clients">OAuth clients</NavLink>
        {isAdmin && <NavLink href="/webhooks">Webhooks</NavLink>}
        <NavLink href="/usage">AI usage</NavLink>
        <NavLink href="/billing">Billing</NavLink>
        {isSandbox && <NavLink href="/sandbox">Sandbox</NavLink>}
      </nav>
      <SandboxBanner />
      {isAdmin && <DisabledWebhooksBanner />}
      <PendingInvitations />
      <ReadOnlyContext.Provider value={readOnly}>
        <main id="main">{children}</main>
        <Tour />
      </ReadOnlyContext.Provider>
    </>
  );
}

function Routes() {
  const { session } = useSession();
  const [location] = useLocation();
  if (!session) return location === '/auth/callback' ? <OidcCallback /> : <SignIn />;
  return (
    <Shell>
      <Switch>
        <Route path="/">
          <Flags />
        </Route>
        <Route path="/flags/new">
          <ReadOnlyScope>
            <CreateFlag />
          </ReadOnlyScope>
        </Route>
        <Route path="/segments">
          <Suspense fallback={<Loading what="segments" />}>
            <Segments />
          </Suspense>
        </Route>
        <Route path="/segments/:key">
          {(p) => (
            <Suspense fallback={<Loading what="the segment" />}>
              <SegmentDetail key={p.key} segmentKey={decodeURIComponent(p.key)} />
            </Suspense>
          )}
        </Route>
        <Route path="/approvals">
          <Approvals />
        </Route>
        <Route path="/projects">
          <Projects />
        </Route>
        <Route path="/environments">
          <Environments />
        </Route>
        <Route path="/team">
          <Team />
        </Route>
        <Route path="/oauth-clients">
          <OAuthClients />
        </Route>
        <Route path="/webhooks">
          <Suspense fallback={<Loading what="webhooks" />}>
            <Webhooks />
          </Suspense>
        </Route>
        <Route path="/usage">
          <Suspense fallback={<Loading what="AI usage" />}>
            <Usage />
          </Suspense>
        </Route>
        <Route path="/billing">
          <Suspense fallback={<Loading what="billing" />}>
            <Billing />
          </Suspense>
        </Route>
        <Route path="/sandbox">
          <SandboxPage />
        </Route>
        <Route path="/flags/:key">
          {(p) => (
            <ReadOnlyScope>
              <FlagDetail key={p.key} flagKey={decodeURIComponent(p.key)} />
            </ReadOnlyScope>
          )}
        </Route>
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
  // Nothing one user saw stays cached for the next: cleared when a session ends. The sign-in page's
  // own query (how to sign in) is no user's data, and is in flight as the page opens: it stays.
  const signedIn = useRef(session !== null);
  useEffect(() => {
    if (signedIn.current && !session) {
      client.removeQueries({ predicate: (q) => q.queryKey[0] !== SIGN_IN_CONFIG_KEY });
      client.getMutationCache().clear();
    }
    signedIn.current = session !== null;
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
