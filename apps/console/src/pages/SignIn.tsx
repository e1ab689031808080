import { useMutation } from '@tanstack/react-query';
import { useEffect, useRef, useState, type ReactNode } from 'react';
import { Button, FieldError, Form, Input, Label, TextField } from 'react-aria-components';
import { Link, useLocation } from 'wouter';
import { request, type Bootstrap } from '../api';
import { ErrorState, Loading } from '../components/States';
import { isOidc, OidcSignInError, type OidcConfig, useSignInConfig } from '../oidc';
import { useSession } from '../session';

/** The OIDC flow (oauth4webapi) loads on demand; a failed load is a sign-in that cannot start. */
const flow = () =>
  import('../oidc-flow').catch(() => {
    throw new OidcSignInError('Part of the console could not be loaded. Reload the page and try again.');
  });

interface Credentials { email: string; password: string; mode: 'signin' | 'signup' }

/** Dev identity provider, then the sign-in bootstrap (signup or login) that names the user's tenants. */
async function signInWithDevIdp({ email, password, mode }: Credentials) {
  const idp = await request<{ idToken: string }>('POST', mode === 'signup' ? '/dev/idp/accounts' : '/dev/idp/token', {}, { email, password });
  const idToken = idp.body.idToken;
  const boot =
    mode === 'signup'
      ? await request<Bootstrap>('POST', '/api/v1/auth/signup', {}, { idToken, email, password })
      : await request<Bootstrap>('POST', '/api/v1/auth/login', {}, { idToken });
  return { idToken, data: boot.body.data };
}

/** The sign-in page: the dev identity provider's form, or (IDP_MODE=oidc) a button to the configured provider. */
export function SignIn({ redirect = (url: string) => window.location.assign(url) }: { redirect?: (url: string) => void }) {
  const config = useSignInConfig();
  let body: ReactNode;
  if (config.isPending) body = <Loading what="sign-in" />;
  else if (config.error) body = <ErrorState error={config.error} onRetry={() => void config.refetch()} />;
  else if (isOidc(config.data)) body = <OidcSignIn cfg={config.data} redirect={redirect} />;
  else if (config.data.mode === 'oidc') body = <SignInProblem>Sign-in through the console is not configured on this server (IDP_CLIENT_ID is not set).</SignInProblem>;
  else body = <DevSignIn />;
  return <SignInFrame>{body}</SignInFrame>;
}

function SignInFrame({ children }: { children: ReactNode }) {
  const { notice } = useSession();
  return (
    <main className="signin">
      <h1>Flagship console</h1>
      {notice && (
        <p role="status" className="notice">
          {notice}
        </p>
      )}
      {children}
    </main>
  );
}

function SignInProblem({ children, back }: { children: ReactNode; back?: boolean }) {
  return (
    <div role="alert" className="state error">
      <h2>Sign-in did not complete</h2>
      <p>{children}</p>
      {back && <Link href="/">Back to sign-in</Link>}
    </div>
  );
}

function OidcSignIn({ cfg, redirect }: { cfg: OidcConfig; redirect: (url: string) => void }) {
  const start = useMutation({ mutationFn: async () => redirect((await (await flow()).authorizationUrl(cfg)).href) });
  return (
    <>
      <div className="actions">
        <Button className="primary" isDisabled={start.isPending || start.isSuccess} onPress={() => start.mutate()}>
          Sign in with {cfg.displayName}
        </Button>
      </div>
      {(start.isPending || start.isSuccess) && (
        <p role="status" className="state">
          Going to {cfg.displayName}…
        </p>
      )}
      {start.error && <SignInProblem>{start.error.message}</SignInProblem>}
    </>
  );
}

/** /auth/callback: the provider's answer (code and state), exchanged once, then the session. */
export function OidcCallback() {
  const config = useSignInConfig();
  const { signIn } = useSession();
  const [, navigate] = useLocation();
  const [callback] = useState(() => new URL(window.location.href));
  const started = useRef(false);
  const done = useMutation({
    mutationFn: async (cfg: OidcConfig) => (await flow()).completeSignIn(cfg, callback),
    onSuccess: ({ idToken, data }) => {
      navigate('/', { replace: true });
      signIn({ token: idToken, email: data.user.email, userId: data.user.uid, tenants: data.tenants, tenantId: data.active_tenant_id });
    },
  });
  const { mutate } = done;
  useEffect(() => {
    if (started.current || !isOidc(config.data)) return;
    started.current = true;
    // The code and state are single-use: out of the address bar and the history at once.
    window.history.replaceState(null, '', window.location.pathname);
    mutate(config.data);
  }, [config.data, mutate]);

  let body: ReactNode;
  if (config.error) body = <ErrorState error={config.error} onRetry={() => void config.refetch()} />;
  else if (config.data && !isOidc(config.data)) body = <SignInProblem back>Sign-in with an OpenID provider is not configured on this server.</SignInProblem>;
  else if (done.error) {
    body =
      done.error instanceof OidcSignInError ? (
        <SignInProblem back>{done.error.message}</SignInProblem>
      ) : (
        <>
          <ErrorState error={done.error} />
          <Link href="/">Back to sign-in</Link>
        </>
      );
  } else body = <Loading what="your session" />;
  return <SignInFrame>{body}</SignInFrame>;
}

/** IDP_MODE=dev: e-mail and password at the embedded identity provider. */
function DevSignIn() {
  const { signIn, lastEmail } = useSession();
  // Kept across an ended session: the user does not retype their e-mail.
  const [email, setEmail] = useState(lastEmail);
  const [password, setPassword] = useState('');
  const m = useMutation({
    mutationFn: signInWithDevIdp,
    onSuccess: ({ idToken, data }) => signIn({ token: idToken, email: data.user.email, userId: data.user.uid, tenants: data.tenants, tenantId: data.active_tenant_id }),
  });
  const submit = (mode: Credentials['mode']) => m.mutate({ email, password, mode });
  return (
    <>
      <Form
        validationErrors={m.error && 'fieldErrors' in m.error ? (m.error.fieldErrors as Record<string, string>) : undefined}
        onSubmit={(e) => {
          e.preventDefault();
          submit('signin');
        }}
      >
        <TextField name="email" type="email" isRequired value={email} onChange={setEmail} autoComplete="username">
          <Label>Email</Label>
          <Input />
          <FieldError />
        </TextField>
        <TextField name="password" type="password" isRequired minLength={8} value={password} onChange={setPassword} autoComplete="current-password">
          <Label>Password</Label>
          <Input />
          <FieldError />
        </TextField>
        <div className="actions">
          <Button type="submit" className="primary" isDisabled={m.isPending}>
            Sign in
          </Button>
          <Button
            isDisabled={m.isPending}
            onPress={() => {
              const form = document.querySelector('form');
              if (form && !form.reportValidity()) return;
              submit('signup');
            }}
          >
            Create account
          </Button>
        </div>
      </Form>
      {m.isPending && (
        <p role="status" className="state">
          Signing in…
        </p>
      )}
      {m.error && <ErrorState error={m.error} />}
    </>
  );
}
