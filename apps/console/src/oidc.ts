// How this deployment signs users in (GET /api/v1/auth/config). The OIDC flow itself is in
// oidc-flow.ts, loaded only when the provider is used: dev mode's initial JavaScript does not carry it.
import { useQuery } from '@tanstack/react-query';
import { request } from './api';

/** GET /api/v1/auth/config: how this deployment signs users in. */
export interface SignInConfig {
  mode: 'dev' | 'oidc';
  issuer?: string;
  clientId?: string;
  scopes?: string[];
  redirectUri?: string;
  provider?: string;
  providerName?: string;
  displayName?: string;
}
export type OidcConfig = Required<SignInConfig>;

export const SIGN_IN_CONFIG_KEY = 'auth-config';

export function useSignInConfig() {
  return useQuery({
    queryKey: [SIGN_IN_CONFIG_KEY],
    queryFn: async () => (await request<SignInConfig>('GET', '/api/v1/auth/config', {})).body,
    staleTime: Infinity,
  });
}

/** The console's OIDC client is configured (oidc mode without IDP_CLIENT_ID leaves the console no way in). */
export const isOidc = (c: SignInConfig | undefined): c is OidcConfig =>
  c?.mode === 'oidc' && !!c.issuer && !!c.clientId && !!c.redirectUri && !!c.provider && !!c.providerName && !!c.scopes;

/** A sign-in that cannot go on; its message is what the user reads. */
export class OidcSignInError extends Error {}
