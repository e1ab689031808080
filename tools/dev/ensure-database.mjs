// Creates the database named in DATABASE_URL when it does not exist yet (quickstart and CI).
import pg from 'pg';
import { pgClientConfig } from './database-tls.mjs';

const url = new URL(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/flagship');
const name = decodeURIComponent(url.pathname.slice(1));
if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
  console.error(`DATABASE_URL names an unusual database "${name}"; create it yourself.`);
  process.exit(1);
}
const admin = new URL(url);
admin.pathname = '/postgres';
let config;
try {
  // TLS as the apps and the migrate command connect (DATABASE_SSL_MODE, sslmode with libpq's meanings).
  config = pgClientConfig(admin.toString());
} catch (err) {
  console.error(`invalid configuration: ${err.message}`);
  process.exit(1);
}
const client = new pg.Client(config);
await client.connect();
const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
if (!rowCount) {
  await client.query(`CREATE DATABASE ${name}`);
  console.log(`created database ${name}`);
}
await client.end();
