import { screen } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { renderWithQueries, routeServer } from '../testing';
import { SessionProvider } from '../session';
import { SignIn } from './SignIn';

const ISSUER = 'https://id.acme.test';
const CONFIG = {
  mode: 'oidc',
  issuer: ISSUER,
  clientId: 'flagship-console',
  scopes: ['openid', 'email', 'profile'],
  redirectUri: 'https://flags.acme.test/console/auth/callback',
  provider: 'oidc',
  providerName: 'oidc.acme',
  displayName: 'Acme ID',
};
const DISCOVERY = {
  issuer: ISSUER,
  authorization_endpoint: `${ISSUER}/auth`,
  token_endpoint: `${ISSUER}/token`,
  jwks_uri: `${ISSUER}/jwks`,
  response_types_supported: ['code'],
  code_challenge_methods_supported: ['S256'],
};

const renderSignIn = (redirect: (url: string) => void) =>
  renderWithQueries(
    <SessionProvider initial={null}>
      <SignIn redirect={redirect} />
    </SessionProvider>,
  );

describe('sign-in page with IDP_MODE=oidc', () => {
  // Under jsdom, WebCrypto's ArrayBuffer comes from another realm than the page's, so oauth4webapi's
  // `instanceof ArrayBuffer` misses it; the same bytes as a Uint8Array are what a browser's code sees.
  const digest = crypto.subtle.digest.bind(crypto.subtle);
  beforeEach(() => {
    vi.spyOn(crypto.subtle, 'digest').mockImplementation((async (alg: AlgorithmIdentifier, data: BufferSource) => new Uint8Array(await digest(alg, data))) as unknown as typeof crypto.subtle.digest);
  });
  afterEach(() => {
    vi.restoreAllMocks();
    vi.unstubAllGlobals();
    sessionStorage.clear();
  });

  it('offers the provider instead of the form, and sends the browser there with PKCE (S256), state and nonce', async () => {
    const sent = routeServer((req) => {
      if (req.url === '/api/v1/auth/config') return { status: 200, body: CONFIG };
      if (req.url === `${ISSUER}/.well-known/openid-configuration`) return { status: 200, body: DISCOVERY };
      return undefined;
    });
    const redirect = vi.fn();
    renderSignIn(redirect);
    await userEvent.click(await screen.findByRole('button', { name: 'Sign in with Acme ID' }));
    expect(screen.queryByLabelText('Password')).toBeNull();
    await vi.waitFor(() => expect([redirect.mock.calls.length, screen.queryByRole('alert')?.textContent]).toEqual([1, undefined]));

    const url = new URL(redirect.mock.calls[0]![0] as string);
    expect(`${url.origin}${url.pathname}`).toBe(`${ISSUER}/auth`);
    const q = Object.fromEntries(url.searchParams);
    expect(q).toMatchObject({
      client_id: 'flagship-console',
      redirect_uri: CONFIG.redirectUri,
      response_type: 'code',
      scope: 'openid email profile',
      code_challenge_method: 'S256',
    });
    expect(q['code_challenge']).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(q['state']).toMatch(/^[A-Za-z0-9_-]{20,}$/);
    expect(q['nonce']).toMatch(/^[A-Za-z0-9_-]{20,}$/);
    expect(q['state']).not.toBe(q['nonce']);
    // The verifier stays in this tab for the round trip; only its S256 hash travels.
    const pending = JSON.parse(sessionStorage.getItem('flagship.console.oidc-pending') ?? '{}') as Record<string, string>;
    expect([pending['state'], pending['nonce']]).toEqual([q['state'], q['nonce']]);
    const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(pending['codeVerifier'])));
    expect(btoa(String.fromCharCode(...digest)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')).toBe(q['code_challenge']);
    expect(url.href).not.toContain(pending['codeVerifier']!);
    expect(sent.map((r) => r.url)).toEqual(['/api/v1/auth/config', `${ISSUER}/.well-known/openid-configuration`]);
  });

  it('says so when the provider cannot be reached, and stays on the page', async () => {
    routeServer((req) => {
      if (req.url === '/api/v1/auth/config') return { status: 200, body: CONFIG };
      if (req.url.startsWith(ISSUER)) return { status: 503, body: { error: 'down' } };
      return undefined;
    });
    const redirect = vi.fn();
    renderSignIn(redirect);
    await userEvent.click(await screen.findByRole('button', { name: 'Sign in with Acme ID' }));
    expect(await screen.findByRole('alert')).toHaveTextContent('Acme ID cannot be reached right now');
    expect(redirect).not.toHaveBeenCalled();
    expect(screen.getByRole('button', { name: 'Sign in with Acme ID' })).toBeEnabled();
  });

  it('keeps the e-mail and password form in dev mode', async () => {
    routeServer((req) => (req.url === '/api/v1/auth/config' ? { status: 200, body: { mode: 'dev' } } : undefined));
    renderSignIn(vi.fn());
    await screen.findByLabelText('Email');
    expect(screen.getByLabelText('Password')).toBeInTheDocument();
    expect(screen.getByRole('button', { name: 'Sign in' })).toBeInTheDocument();
    expect(screen.getByRole('button', { name: 'Create account' })).toBeInTheDocument();
    expect(screen.queryByRole('button', { name: /Sign in with/ })).toBeNull();
  });
});
