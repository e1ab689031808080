import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** What `npm start` prints of its secrets, run as it runs (an ES module, stdout a pipe here). */
function print(tty: boolean, file: string): string {
  const script = `import { secretLines } from ${JSON.stringify(join(__dirname, 'dev-secrets.mjs'))};
for (const line of secretLines([['orep token', 'OREP_AUTH_TOKEN', 'orep-s3cret'], ['demo client secret', 'DEMO_CLIENT_SECRET', 'ffs_s3cret']], { tty: ${tty}, file: ${JSON.stringify(file)} })) console.log(line);`;
  return execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
}

describe('npm start and its secrets', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'dev-secrets-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('not a terminal: no secret in the output, which names a file only its owner can read', () => {
    const file = join(dir, 'tmp', 'dev-secrets.env');
    const out = print(false, file);
    expect(out).not.toMatch(/s3cret/);
    expect(out).toContain(file);
    expect(readFileSync(file, 'utf8')).toBe('OREP_AUTH_TOKEN=orep-s3cret\nDEMO_CLIENT_SECRET=ffs_s3cret\n');
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it('an older, readable file is narrowed to 0600 and replaced', () => {
    const file = join(dir, 'dev-secrets.env');
    writeFileSync(file, 'OLD=1\n', { mode: 0o644 });
    print(false, file);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(file, 'utf8')).not.toContain('OLD');
  });

  it('a terminal: printed, and no file written', () => {
    const file = join(dir, 'dev-secrets.env');
    expect(print(true, file).split('\n')).toEqual(['  orep token      orep-s3cret', '  demo client secret ffs_s3cret', '']);
    expect(() => statSync(file)).toThrow();
  });
});
