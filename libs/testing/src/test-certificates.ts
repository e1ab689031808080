import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A certificate authority made for one test, and server certificates it signs (files, PEM). */
export interface TestCa {
  /** The CA's certificate: what a client trusts (DATABASE_SSL_CA_FILE). */
  certFile: string;
  /** A server certificate and key signed by this CA, naming `altNames` (e.g. ['IP:127.0.0.1', 'DNS:localhost']). */
  issueServer(name: string, altNames: string[]): { certFile: string; keyFile: string };
  /** Deletes its directory. */
  remove(): void;
}

/** A new CA (EC P-256, fast to make) in a temporary directory, with the real `openssl` binary. */
export function createTestCa(commonName = 'flagship test CA'): TestCa {
  const dir = mkdtempSync(join(tmpdir(), 'flagship-ca-'));
  const caKey = join(dir, 'ca.key');
  const caCert = join(dir, 'ca.crt');
  const openssl = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', caKey]);
  openssl(['req', '-x509', '-new', '-key', caKey, '-sha256', '-days', '2', '-subj', `/CN=${commonName}`, '-out', caCert]);
  return {
    certFile: caCert,
    issueServer(name, altNames) {
      const key = join(dir, `${name}.key`);
      const csr = join(dir, `${name}.csr`);
      const cert = join(dir, `${name}.crt`);
      const ext = join(dir, `${name}.ext`);
      writeFileSync(ext, `subjectAltName=${altNames.join(',')}\nextendedKeyUsage=serverAuth\n`);
      openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', key]);
      openssl(['req', '-new', '-key', key, '-subj', `/CN=${name}`, '-out', csr]);
      openssl(['x509', '-req', '-in', csr, '-CA', caCert, '-CAkey', caKey, '-CAcreateserial', '-days', '2', '-sha256', '-extfile', ext, '-out', cert]);
      return { certFile: cert, keyFile: key };
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
