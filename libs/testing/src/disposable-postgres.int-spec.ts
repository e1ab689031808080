import { Client } from 'pg';
import { DisposablePostgres } from './processes';

/** A cluster of the test's own: crash() is a real immediate shutdown (start() runs crash recovery), and a durable commit survives it. */
describe('DisposablePostgres', () => {
  let pg: DisposablePostgres;

  beforeAll(async () => {
    pg = await DisposablePostgres.start();
  }, 30_000);

  afterAll(async () => {
    await pg?.destroy();
  });

  const query = async (sql: string): Promise<unknown[]> => {
    const c = new Client({ connectionString: pg.url });
    await c.connect();
    try {
      return (await c.query(sql)).rows;
    } finally {
      await c.end();
    }
  };

  it('crashes (connections cut, recovery on restart) and keeps what was committed durably', async () => {
    await query('CREATE TABLE kept (n int)');
    await query('INSERT INTO kept VALUES (1)');
    const held = new Client({ connectionString: pg.url });
    await held.connect();
    const lost = new Promise((resolve) => held.once('error', resolve));
    await pg.crash();
    // A connection open at the crash is cut, as every backend is killed.
    expect(await lost).toBeInstanceOf(Error);
    await expect(query('SELECT 1')).rejects.toThrow();
    await pg.start();
    expect(await query('SELECT n FROM kept')).toEqual([{ n: 1 }]);
    // The restart was crash recovery, not a clean start.
    expect(await pg.log()).toMatch(/database system was interrupted|not properly shut down/);
  }, 30_000);
});
