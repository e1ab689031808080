import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { http } from '@flagship/testing';
import { ManagementApiFixture } from '../testing/management-api.fixture';
import { CONSOLE_CSP } from './console-static';

// The console's files as a build leaves them (index.html plus hashed assets), served over real HTTP.
describe('the web console at /console', () => {
  let api: ManagementApiFixture;
  let dir: string;
  const INDEX = '<!doctype html><title>Flagship console</title><script type="module" src="/console/assets/index-Ab12Cd34.js"></script>';

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'console-'));
    mkdirSync(join(dir, 'assets'));
    writeFileSync(join(dir, 'index.html'), INDEX);
    writeFileSync(join(dir, 'assets', 'index-Ab12Cd34.js'), 'console.log("console")');
    api = await ManagementApiFixture.start({ CONSOLE_DIR: dir });
  });
  afterAll(async () => {
    await api.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves index.html with a strict CSP, revalidated on every load', async () => {
    const res = await http<string>(`${api.url}/console/`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.text).toBe(INDEX);
    expect(res.headers.get('content-security-policy')).toBe(CONSOLE_CSP);
    expect(CONSOLE_CSP).toContain("script-src 'self'");
    expect(CONSOLE_CSP).not.toContain('unsafe-inline');
    expect(CONSOLE_CSP).not.toContain('unsafe-eval');
    expect(res.headers.get('cache-control')).toBe('no-cache');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('x-frame-options')).toBe('DENY');
  });

  it('caches hashed assets for a year, immutable', async () => {
    const res = await http<string>(`${api.url}/console/assets/index-Ab12Cd34.js`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/javascript/);
    expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(res.headers.get('content-security-policy')).toBe(CONSOLE_CSP);
  });

  it('answers a client route with index.html (the single-page app routes it)', async () => {
    for (const path of ['/console/flags/new-checkout', '/console/flags/new']) {
      const res = await http<string>(`${api.url}${path}`);
      expect(res.status).toBe(200);
      expect(res.text).toBe(INDEX);
      expect(res.headers.get('cache-control')).toBe('no-cache');
    }
  });

  it('redirects /console to /console/', async () => {
    const res = await http(`${api.url}/console`, { redirect: 'manual' });
    expect(res.status).toBe(301);
    expect(res.headers.get('location')).toBe('/console/');
  });

  it('a missing asset is a 404 problem, never index.html served as JavaScript', async () => {
    const res = await http<{ status: number }>(`${api.url}/console/assets/index-Gone0000.js`);
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect(res.text).not.toContain('<!doctype html>');
  });

  it('serves nothing outside its directory and takes no writes', async () => {
    const traversal = await http(`${api.url}/console/assets/%2e%2e/%2e%2e/package.json`);
    expect([403, 404]).toContain(traversal.status);
    expect(traversal.text).not.toContain('"dependencies"');
    const post = await http(`${api.url}/console/`, { method: 'POST', json: {} });
    expect(post.status).toBe(404);
  });

  it('leaves the API as it was', async () => {
    const res = await http(`${api.url}/api/flags`);
    expect(res.status).toBe(401);
    expect(res.headers.get('content-security-policy')).toBeNull();
  });
});
