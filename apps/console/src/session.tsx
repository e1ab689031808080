import { createContext, useCallback, useContext, useMemo, useState, type ReactNode } from 'react';
import type { RequestScope, TenantRef } from './api';

/** The signed-in user's session. The ID token lives in sessionStorage only: gone with the tab, never in a URL. */
export interface Session {
  token: string;
  email: string;
  /** The user's id (`user:{id}` authors their change requests); absent in sessions saved before it was kept. */
  userId?: string;
  tenants: TenantRef[];
  tenantId: string;
  environment: string;
}

const KEY = 'flagship.console.session';

interface SessionApi {
  session: Session | null;
  /** Why the user is on the sign-in page, when it was not their choice. */
  notice: string | null;
  /** The e-mail of a session that ended by itself, so the user does not retype it. */
  lastEmail: string;
  signIn(s: Omit<Session, 'environment'>): void;
  signOut(notice?: string): void;
  setTenant(id: string): void;
  /** A tenant the user just joined (an accepted invitation) goes into the tenant switcher; the active one stays. */
  joinTenant(tenant: TenantRef): void;
  setEnvironment(key: string): void;
  scope: RequestScope;
}

const Ctx = createContext<SessionApi | null>(null);

function load(): Session | null {
  try {
    const raw = sessionStorage.getItem(KEY);
    return raw ? (JSON.parse(raw) as Session) : null;
  } catch {
    return null;
  }
}

export function SessionProvider({ children, initial }: { children: ReactNode; initial?: Session | null }) {
  const [session, setSession] = useState<Session | null>(() => (initial !== undefined ? initial : load()));
  const [notice, setNotice] = useState<string | null>(null);
  const [lastEmail, setLastEmail] = useState('');
  const save = useCallback((s: Session | null) => {
    if (s) sessionStorage.setItem(KEY, JSON.stringify(s));
    else sessionStorage.removeItem(KEY);
    setSession(s);
  }, []);
  const api = useMemo<SessionApi>(
    () => ({
      session,
      notice,
      lastEmail,
      signIn: (s) => {
        setNotice(null);
        save({ ...s, environment: 'production' });
      },
      signOut: (n) => {
        setNotice(n ?? null);
        // From storage, not this render's session: the 401 handler keeps the first render's callbacks.
        // Several requests may fail at once: only the first, which still finds the session, sets it.
        const ended = load();
        if (!n) setLastEmail('');
        else if (ended) setLastEmail(ended.email);
        save(null);
      },
      setTenant: (id) => session && save({ ...session, tenantId: id }),
      joinTenant: (t) => session && !session.tenants.some((x) => x.tenant_id === t.tenant_id) && save({ ...session, tenants: [...session.tenants, t] }),
      setEnvironment: (key) => session && save({ ...session, environment: key }),
      scope: session ? { token: session.token, tenantId: session.tenantId, environment: session.environment } : {},
    }),
    [session, notice, lastEmail, save],
  );
  return <Ctx.Provider value={api}>{children}</Ctx.Provider>;
}

export function useSession(): SessionApi {
  const v = useContext(Ctx);
  if (!v) throw new Error('useSession outside SessionProvider');
  return v;
}

/** For screens behind sign-in: the session is there (App routes only signed-in users to them). */
export function useSignedIn(): Session & { scope: RequestScope } {
  const { session, scope } = useSession();
  if (!session) throw new Error('not signed in');
  return { ...session, scope };
}
