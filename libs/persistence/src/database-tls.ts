import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';
import { ConfigError } from '@flagship/config';

/** libpq's sslmode values the driver can honour (it cannot fall back from TLS to plain, so no allow or prefer). */
export const DATABASE_SSL_MODES = ['disable', 'require', 'verify-ca', 'verify-full'] as const;
export type DatabaseSslMode = (typeof DATABASE_SSL_MODES)[number];

/** What the operator set: DATABASE_SSL_MODE and DATABASE_SSL_CA_FILE ('' = unset). */
export interface DatabaseTlsSettings {
  mode?: string;
  caFile?: string;
}

/** How one Postgres connection is opened: the URL without its TLS parameters, and the TLS options pg gets. */
export interface PgConnection {
  url: string;
  mode: DatabaseSslMode;
  /** false: plain TCP. Otherwise node:tls options (the CA bundle read, verification as the mode says). */
  ssl: false | ConnectionOptions;
  /** Where the trusted CAs come from, for error messages: the file's path, or Node's built-in public CAs. */
  trust: string;
  /** The CA bundle's path when one is trusted (DATABASE_SSL_CA_FILE or the URL's sslrootcert), for its expiry gauge. */
  caFile?: string;
}

/** The settings of a validated config (every app's commonEnv has both). */
export function databaseTlsSettings(config: { DATABASE_SSL_MODE: string; DATABASE_SSL_CA_FILE: string }): DatabaseTlsSettings {
  return { mode: config.DATABASE_SSL_MODE, caFile: config.DATABASE_SSL_CA_FILE };
}

/** Read here and removed from the URL, so pg never applies its own (not libpq's) reading of them. */
const HANDLED_PARAMS = ['sslmode', 'sslrootcert'];
/** Parameters pg would act on that we do not support: refused rather than silently ignored. */
const REFUSED_PARAMS: Record<string, string> = {
  sslcert: 'client certificates are not supported',
  sslkey: 'client certificates are not supported',
  sslpassword: 'client certificates are not supported',
  sslcrl: 'certificate revocation lists are not supported',
  sslnegotiation: 'only the standard TLS negotiation is supported',
  ssl: 'set sslmode or DATABASE_SSL_MODE instead',
  uselibpqcompat: 'sslmode already has libpq’s meaning here',
};

/**
 * The one place TLS to Postgres is decided, for every pool the project opens (the apps', the migrate
 * command's, the gateway's durable ledger connections). The mode is DATABASE_SSL_MODE, else the URL's
 * sslmode, else disable; both set and different is refused rather than one silently winning. The modes
 * mean what they mean to libpq: require encrypts without checking the server (but with a CA file
 * checks the chain, as libpq does), verify-ca checks the chain against the CA bundle, verify-full also
 * the host name. Throws a ConfigError (one line, no password) for anything it cannot honour.
 */
export function pgConnection(url: string, settings: DatabaseTlsSettings = {}): PgConnection {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new ConfigError('invalid configuration: DATABASE_URL is invalid (not a URL)');
  }
  for (const [name, why] of Object.entries(REFUSED_PARAMS)) {
    if (u.searchParams.has(name)) throw new ConfigError(`invalid configuration: DATABASE_URL's ${name} parameter is not supported (${why})`);
  }
  const urlMode = u.searchParams.get('sslmode') ?? '';
  const urlRootCert = u.searchParams.get('sslrootcert') ?? '';
  for (const p of HANDLED_PARAMS) u.searchParams.delete(p);

  if (urlMode !== '' && !isMode(urlMode)) {
    throw new ConfigError(`invalid configuration: DATABASE_URL's sslmode=${urlMode} is not supported (use ${DATABASE_SSL_MODES.join(', ')})`);
  }
  const envMode = settings.mode ?? '';
  if (envMode !== '' && !isMode(envMode)) {
    throw new ConfigError(`invalid configuration: DATABASE_SSL_MODE is invalid ("${envMode}"; use ${DATABASE_SSL_MODES.join(', ')})`);
  }
  if (envMode !== '' && urlMode !== '' && envMode !== urlMode) {
    throw new ConfigError(`invalid configuration: DATABASE_SSL_MODE=${envMode} disagrees with DATABASE_URL's sslmode=${urlMode} (set one of them)`);
  }
  const envCa = settings.caFile ?? '';
  if (envCa !== '' && urlRootCert !== '' && envCa !== urlRootCert) {
    throw new ConfigError(`invalid configuration: DATABASE_SSL_CA_FILE disagrees with DATABASE_URL's sslrootcert (set one of them)`);
  }
  const mode: DatabaseSslMode = (envMode || urlMode || 'disable') as DatabaseSslMode;
  // libpq's sslrootcert=system: the platform's public CAs (Node's built-in bundle here).
  const caFile = (envCa || urlRootCert) === 'system' ? '' : envCa || urlRootCert;
  const caSetting = envCa !== '' ? 'DATABASE_SSL_CA_FILE' : "DATABASE_URL's sslrootcert";
  const stripped = u.toString();

  if (mode === 'disable') {
    if (caFile !== '') throw new ConfigError(`invalid configuration: ${caSetting} is set but the database TLS mode is disable (set DATABASE_SSL_MODE)`);
    return { url: stripped, mode, ssl: false, trust: 'none' };
  }
  if (mode === 'verify-ca' && caFile === '') {
    // Only the chain, against every public CA, would accept anyone's publicly signed certificate.
    throw new ConfigError('invalid configuration: DATABASE_SSL_MODE=verify-ca needs DATABASE_SSL_CA_FILE (the CA that signed the server certificate)');
  }
  const ca = caFile === '' ? undefined : readCaBundle(caFile, caSetting);
  const trust = caFile === '' ? "Node's built-in public CAs" : caFile;
  if (mode === 'require' && ca === undefined) return { url: stripped, mode, ssl: { rejectUnauthorized: false }, trust: 'none (not verified)' };
  const ssl: ConnectionOptions = { rejectUnauthorized: true, ...(ca !== undefined ? { ca } : {}) };
  // verify-full keeps Node's host name check; verify-ca (and require with a CA, as in libpq) checks the chain only.
  if (mode !== 'verify-full') ssl.checkServerIdentity = () => undefined;
  return { url: stripped, mode, ssl, trust, ...(caFile !== '' ? { caFile } : {}) };
}

/**
 * Adds what was tried to a failed connection's error when TLS is the likely cause (a certificate the
 * CA bundle does not vouch for, a host name the certificate does not name, a server without TLS).
 */
export function explainConnectError(err: unknown, connection: PgConnection): unknown {
  // Not `instanceof Error`: node's TLS errors may come from another realm (jest's sandbox).
  const message = typeof err === 'object' && err !== null ? (err as { message?: unknown }).message : undefined;
  if (typeof message !== 'string') return err;
  const code = (err as { code?: unknown }).code;
  const tlsRelated =
    (typeof code === 'string' && /CERT|SELF_SIGNED|ERR_TLS|ERR_SSL|UNABLE_TO|HOSTNAME/.test(code)) ||
    /does not support SSL|no encryption|altnames|certificate/i.test(message);
  if (!tlsRelated) return err;
  const explained = new Error(`Postgres TLS (mode ${connection.mode}, trusting ${connection.trust}): ${message}`, { cause: err });
  (explained as { code?: unknown }).code = code;
  return explained;
}

function isMode(s: string): s is DatabaseSslMode {
  return (DATABASE_SSL_MODES as readonly string[]).includes(s);
}

/** The certificates of a PEM bundle, each as its own PEM block, in order. */
export function pemCertificates(pem: string): string[] {
  return pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
}

function readCaBundle(path: string, setting: string): string {
  let pem: string;
  try {
    pem = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`invalid configuration: ${setting} cannot be read (${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)})`);
  }
  const blocks = pemCertificates(pem);
  if (blocks.length === 0) throw new ConfigError(`invalid configuration: ${setting} holds no PEM certificate (${path})`);
  for (const block of blocks) {
    try {
      new X509Certificate(block);
    } catch {
      throw new ConfigError(`invalid configuration: ${setting} holds a certificate that does not parse (${path})`);
    }
  }
  return pem;
}
