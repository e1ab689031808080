/** Injection token of the app's TypeORM DataSource. */
export const DATA_SOURCE = Symbol('DATA_SOURCE');

/**
 * Injection token of the Postgres CA bundle's path the DataSource trusts (DATABASE_SSL_CA_FILE or the
 * URL's sslrootcert), as pgConnection decided it; null without one (TLS off, or Node's public CAs).
 */
export const DATABASE_CA_FILE = Symbol('DATABASE_CA_FILE');
