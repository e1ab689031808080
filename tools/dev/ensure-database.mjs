// Creates the database named in DATABASE_URL when it does not exist yet (quickstart and CI).
import pg from 'pg';

const url = new URL(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/flagship');
const name = decodeURIComponent(url.pathname.slice(1));
if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
  console.error(`DATABASE_URL names an unusual database "${name}"; create it yourself.`);
  process.exit(1);
}
const admin = new URL(url);
admin.pathname = '/postgres';
const client = new pg.Client({ connectionString: admin.toString() });
await client.connect();
const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
if (!rowCount) {
  await client.query(`CREATE DATABASE ${name}`);
  console.log(`created database ${name}`);
}
await client.end();
