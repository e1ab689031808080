import { useMutation } from '@tanstack/react-query';
import { useState } from 'react';
import { Button, FieldError, Form, Input, Label, TextField } from 'react-aria-components';
import { request, type Bootstrap } from '../api';
import { ErrorState } from '../components/States';
import { useSession } from '../session';

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

export function SignIn() {
  const { signIn, notice, lastEmail } = useSession();
  // Kept across an ended session: the user does not retype their e-mail.
  const [email, setEmail] = useState(lastEmail);
  const [password, setPassword] = useState('');
  const m = useMutation({
    mutationFn: signInWithDevIdp,
    onSuccess: ({ idToken, data }) => signIn({ token: idToken, email: data.user.email, tenants: data.tenants, tenantId: data.active_tenant_id }),
  });
  const submit = (mode: Credentials['mode']) => m.mutate({ email, password, mode });
  return (
    <main className="signin">
      <h1>Flagship console</h1>
      {notice && (
        <p role="status" className="notice">
          {notice}
        </p>
      )}
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
    </main>
  );
}
