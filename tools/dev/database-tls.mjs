// TLS to Postgres for scripts that run before the build (ensure-database.mjs): sslmode with libpq's
// meanings, as libs/persistence/src/database-tls.ts (pgConnection) gives them to every app. A script
// cannot import that TypeScript before the build; tools/dev/ensure-database.int-spec.ts fails when the two disagree.
import { readFileSync } from 'node:fs';

const MODES = ['disable', 'require', 'verify-ca', 'verify-full'];
/** What pgConnection refuses: pg would act on them in its own way. */
const REFUSED = ['sslcert', 'sslkey', 'sslpassword', 'sslcrl', 'sslnegotiation', 'ssl', 'uselibpqcompat'];

/**
 * pg.Client options for `url`: the mode is DATABASE_SSL_MODE, else the URL's sslmode, else disable;
 * the CA bundle DATABASE_SSL_CA_FILE, else the URL's sslrootcert. Throws one line for what the apps
 * refuse to start with.
 */
export function pgClientConfig(url, env = process.env) {
  const u = new URL(url);
  for (const p of REFUSED) if (u.searchParams.has(p)) throw new Error(`DATABASE_URL's ${p} parameter is not supported`);
  const urlMode = u.searchParams.get('sslmode') ?? '';
  const urlCa = u.searchParams.get('sslrootcert') ?? '';
  // Removed, so pg never applies its own reading of them (its require checks the certificate).
  u.searchParams.delete('sslmode');
  u.searchParams.delete('sslrootcert');
  const envMode = env.DATABASE_SSL_MODE ?? '';
  const envCa = env.DATABASE_SSL_CA_FILE ?? '';
  for (const m of [urlMode, envMode]) if (m !== '' && !MODES.includes(m)) throw new Error(`sslmode ${m} is not supported (use ${MODES.join(', ')})`);
  if (envMode !== '' && urlMode !== '' && envMode !== urlMode) throw new Error(`DATABASE_SSL_MODE=${envMode} disagrees with DATABASE_URL's sslmode=${urlMode}`);
  if (envCa !== '' && urlCa !== '' && envCa !== urlCa) throw new Error("DATABASE_SSL_CA_FILE disagrees with DATABASE_URL's sslrootcert");
  const mode = envMode || urlMode || 'disable';
  // sslrootcert=system: Node's built-in public CAs.
  const caFile = (envCa || urlCa) === 'system' ? '' : envCa || urlCa;
  const connectionString = u.toString();
  if (mode === 'disable') {
    if (caFile !== '') throw new Error('a CA bundle is set but the database TLS mode is disable');
    return { connectionString, ssl: false };
  }
  if (mode === 'verify-ca' && caFile === '') throw new Error('DATABASE_SSL_MODE=verify-ca needs DATABASE_SSL_CA_FILE');
  const ca = caFile === '' ? undefined : readFileSync(caFile, 'utf8');
  if (mode === 'require' && ca === undefined) return { connectionString, ssl: { rejectUnauthorized: false } };
  const ssl = { rejectUnauthorized: true, ...(ca !== undefined ? { ca } : {}) };
  // verify-full keeps Node's host name check; verify-ca (and require with a CA) checks the chain only.
  if (mode !== 'verify-full') ssl.checkServerIdentity = () => undefined;
  return { connectionString, ssl };
}
