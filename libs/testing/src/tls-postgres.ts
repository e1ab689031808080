import { DisposablePostgres } from './processes';
import { createTestCa, type TestCa } from './test-certificates';

/**
 * A cluster of one test file's own that takes TCP connections only over TLS (pg_hba hostssl, SCRAM
 * when a password is given), its certificate for 127.0.0.1 signed by `ca`, made here with openssl;
 * `otherCa` signed nothing of it (a CA a client must not be fooled by).
 */
export interface TlsPostgres {
  pg: DisposablePostgres;
  ca: TestCa;
  otherCa: TestCa;
  /** Stops the cluster and deletes it and both CAs. */
  destroy(): Promise<void>;
}

export async function startTlsPostgres(password?: string): Promise<TlsPostgres> {
  const ca = createTestCa('flagship test CA');
  const otherCa = createTestCa('some other CA');
  const remove = () => {
    ca.remove();
    otherCa.remove();
  };
  let pg: DisposablePostgres;
  try {
    pg = await DisposablePostgres.start({ tls: ca.issueServer('127.0.0.1', ['IP:127.0.0.1']), ...(password !== undefined ? { password } : {}) });
  } catch (err) {
    remove();
    throw err;
  }
  return {
    pg,
    ca,
    otherCa,
    destroy: async () => {
      await pg.destroy();
      remove();
    },
  };
}
