/** Path segments of federated sign-in and the provider names (Firebase's) each one accepts. */
export const PROVIDER_SEGMENTS: Readonly<Record<string, (providerName: string) => boolean>> = {
  google: (p) => p === 'google.com' || p === 'google',
  github: (p) => p === 'github.com' || p === 'github',
  microsoft: (p) => p === 'microsoft.com' || p === 'microsoft',
  apple: (p) => p === 'apple.com' || p === 'apple',
  oidc: (p) => p.startsWith('oidc.') || p === 'oidc',
  saml: (p) => p.startsWith('saml.') || p === 'saml',
};

/** The segment whose route accepts `providerName` (`oidc.acme` -> `oidc`), or undefined. */
export const segmentOf = (providerName: string): string | undefined =>
  Object.keys(PROVIDER_SEGMENTS).find((s) => PROVIDER_SEGMENTS[s]?.(providerName.toLowerCase()));
