import { get as httpGet, type IncomingMessage } from 'node:http';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { http } from '@flagship/testing';
import { USAGE_EXPORT_COLUMNS } from '@flagship/ledger';
import { ManagementApiFixture, type SignedUp } from '../testing/management-api.fixture';
import { USAGE_EXPORT_PAGE_ROWS } from './usage-export.service';

/** RFC 4180 read back: records of cells, quotes undone; the test's own reader, not the writer's. */
function parseCsv(text: string): string[][] {
  const records: string[][] = [];
  let cell = '';
  let record: string[] = [];
  let quoted = false;
  const endCell = () => {
    record.push(cell);
    cell = '';
  };
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else cell += ch;
    } else if (ch === '"' && cell === '') quoted = true;
    else if (ch === ',') endCell();
    else if (ch === '\r' && text[i + 1] === '\n') {
      endCell();
      records.push(record);
      record = [];
      i++;
    } else if (ch === '\n' || ch === '\r' || ch === '"') throw new Error(`bare ${JSON.stringify(ch)} at ${i}`);
    else cell += ch;
  }
  if (cell !== '' || record.length > 0) throw new Error('the last record has no CRLF');
  return records;
}

describe('GET /api/usage/export (real HTTP, Postgres, Redis)', () => {
  let f: ManagementApiFixture;
  let ada: SignedUp;
  let editor: SignedUp;
  let stranger: SignedUp;

  /** `n` succeeded rows of a tenant, three per millisecond from `start` (ties the keyset must order by id). */
  const fill = (tenantId: string, n: number, start: string, model = 'small', app = f) =>
    app.sql(
      `INSERT INTO usage_ledger (tenant_id, client_id, product_key, provider, model, endpoint, status, debit, input_tokens, output_tokens, request_id,
                                 created_at, completed_at, flag_key, flag_version, variation)
       SELECT $1, 'ffc_test', 'core', 'inhouse', $4, 'chat.completions', 'succeeded', 1000 + i, 10, 20, 'req-' || i,
              $3::timestamptz + (i / 3) * interval '1 millisecond', $3::timestamptz + (i / 3) * interval '1 millisecond' + interval '250 milliseconds',
              'model-rollout', 7, 'treatment'
         FROM generate_series(1, $2) AS i`,
      [tenantId, n, start, model],
    );

  beforeAll(async () => {
    // Idle cut-off short enough to watch a download nobody reads being closed.
    f = await ManagementApiFixture.start({ USAGE_EXPORT_IDLE_SECONDS: '2' });
    ada = await f.signUp();
    editor = await f.signUp();
    stranger = await f.signUp();
    await f.addMember(ada, ada.tenantId, editor.email, 'editor', editor);
    // Two pages and a bit, and the stranger's rows at the very same instants.
    await fill(ada.tenantId, 2 * USAGE_EXPORT_PAGE_ROWS + 500, '2026-11-01T00:00:00Z');
    await fill(stranger.tenantId, 2 * USAGE_EXPORT_PAGE_ROWS + 500, '2026-11-01T00:00:00Z', 'strangers-model');
  }, 120_000);
  afterAll(async () => {
    await f?.stop();
  });

  const get = (path: string, u: SignedUp = ada, tenant: string | undefined = u.tenantId) => f.call('GET', path, { token: u.idToken, tenant });
  const NOV = 'from=2026-11-01T00:00:00Z&to=2026-12-01T00:00:00Z';

  it("exports every row of the tenant across page boundaries, oldest first, once each, and none of another tenant's", async () => {
    const res = await get(`/api/usage/export?${NOV}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8; header=present');
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="usage-20261101T000000Z-20261201T000000Z.csv"');
    const [header, ...rows] = parseCsv(res.text);
    expect(header).toEqual([...USAGE_EXPORT_COLUMNS]);
    const expected = await f.sql<{ id: string }>('SELECT id FROM usage_ledger WHERE tenant_id = $1 ORDER BY created_at, id', [ada.tenantId]);
    expect(rows.map((r) => r[0])).toEqual(expected.rows.map((r) => r.id));
    expect(rows.length).toBe(2 * USAGE_EXPORT_PAGE_ROWS + 500);
    expect(rows.some((r) => r.includes('strangers-model'))).toBe(false);
    // Rows 1 and 2 share the first millisecond, in id order: the one of req-1.
    const first = rows.slice(0, 2).map((r) => Object.fromEntries(header.map((c, i) => [c, r[i]]))).find((r) => r['request_id'] === 'req-1');
    expect(first).toMatchObject({
      created_at: '2026-11-01T00:00:00.000Z',
      completed_at: '2026-11-01T00:00:00.250Z',
      client_id: 'ffc_test',
      status: 'succeeded',
      debit: '1001',
      input_tokens: '10',
      requested_provider: '',
      zero_rated: 'false',
      flag_key: 'model-rollout',
      flag_version: '7',
      variation: 'treatment',
    });
    // The stranger's export is theirs alone.
    const theirs = parseCsv((await get(`/api/usage/export?${NOV}`, stranger)).text).slice(1);
    expect(theirs.length).toBe(2 * USAGE_EXPORT_PAGE_ROWS + 500);
    expect(new Set(theirs.map((r) => r[0])).size).toBe(theirs.length);
    expect(theirs.some((r) => expected.rows.some((e) => e.id === r[0]))).toBe(false);
  });

  it('keeps to the range and the filter: from inclusive, to exclusive', async () => {
    // Rows 1..5 are at ms 0, 0, 1, 1, 1 (i / 3): [ms 1, ms 2) is rows 3, 4, 5.
    const res = await get('/api/usage/export?from=2026-11-01T00:00:00.001Z&to=2026-11-01T00:00:00.002Z');
    expect(parseCsv(res.text).slice(1).map((r) => r[USAGE_EXPORT_COLUMNS.indexOf('request_id')])).toEqual(expect.arrayContaining(['req-3', 'req-4', 'req-5']));
    expect(parseCsv(res.text).length).toBe(4);
    const none = await get(`/api/usage/export?${NOV}&model=huge`);
    expect([none.status, none.text]).toEqual([200, `${USAGE_EXPORT_COLUMNS.join(',')}\r\n`]);
  });

  it("writes the tenant's own text as RFC 4180 cells a spreadsheet shows and does not run", async () => {
    const models = ['=HYPERLINK("http://evil.test","x")', '+1+cmd|calc', '-2+3', '@SUM(A1)', '\tTAB', 'a,b', 'two\r\nlines', 'say "hi"', 'plain'];
    for (const [i, model] of models.entries()) {
      await f.sql(
        `INSERT INTO usage_ledger (tenant_id, client_id, product_key, provider, model, endpoint, status, created_at, completed_at, client_request_id, error_code)
         VALUES ($1, 'ffc_test', 'core', 'inhouse', $2, 'chat.completions', 'failed', $3, $3, $4, $5)`,
        [ada.tenantId, model, new Date(Date.UTC(2026, 9, 1, 0, 0, i)).toISOString(), '-order:1', i === 0 ? 'upstream,"bad"' : null],
      );
    }
    const res = await get('/api/usage/export?from=2026-10-01&to=2026-10-02');
    const [header, ...rows] = parseCsv(res.text);
    const col = (name: string) => rows.map((r) => r[header.indexOf(name)]);
    expect(col('model')).toEqual(["'=HYPERLINK(\"http://evil.test\",\"x\")", "'+1+cmd|calc", "'-2+3", "'@SUM(A1)", "'\tTAB", 'a,b', 'two\r\nlines', 'say "hi"', 'plain']);
    expect(col('client_request_id')).toEqual(models.map(() => "'-order:1"));
    expect(col('error_code')[0]).toBe('upstream,"bad"');
    // Quoted as RFC 4180 says, on the wire.
    expect(res.text).toContain(`"'=HYPERLINK(""http://evil.test"",""x"")"`);
    expect(res.text).toContain('"two\r\nlines"');
  });

  it('answers JSON lines with typed values', async () => {
    const res = await fetch(`${f.url}/api/usage/export?from=2026-11-01T00:00:00Z&to=2026-11-01T00:00:00.001Z&format=jsonl`, {
      headers: { authorization: `Bearer ${ada.idToken}`, 'x-tenant-id': ada.tenantId },
    });
    expect(res.headers.get('content-type')).toBe('application/jsonl; charset=utf-8');
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="usage-20261101T000000Z-20261101T000000Z.jsonl"');
    const lines = (await res.text()).split('\n');
    expect(lines.pop()).toBe('');
    expect(lines.map((l) => JSON.parse(l)).sort((a, b) => a.request_id.localeCompare(b.request_id))).toEqual([
      expect.objectContaining({ request_id: 'req-1', debit: 1001, input_tokens: 10, zero_rated: false, completed_at: '2026-11-01T00:00:00.250Z', requested_provider: null, flag_version: 7 }),
      expect.objectContaining({ request_id: 'req-2', debit: 1002 }),
    ]);
  });

  it('refuses a range that is missing, reversed, unreal or longer than 366 days with a 422 naming the field', async () => {
    const cases: Array<[string, string[]]> = [
      ['', ['from', 'to']],
      ['from=2026-11-01', ['to']],
      ['to=2026-11-01', ['from']],
      ['from=2026-11-02&to=2026-11-01', ['from']],
      ['from=2026-02-30&to=2026-03-31', ['from']],
      ['from=2026-11-01T00:00:00&to=2026-12-01', ['from']],
      ['from=2025-01-01&to=2026-01-02T00:00:00.001Z', ['to']],
      [`${NOV}&format=xlsx`, ['format']],
      [`${NOV}&status=lost`, ['status']],
    ];
    for (const [q, fields] of cases) {
      const res = await get(`/api/usage/export?${q}`);
      expect([q, res.status, res.headers.get('content-type'), res.body.type, Object.keys(res.body.errors ?? {}).sort()]).toEqual([
        q,
        422,
        'application/problem+json; charset=utf-8',
        '/problems/validation-failed',
        fields,
      ]);
    }
    // A leap year's full 366 days is one export.
    expect((await get('/api/usage/export?from=2028-01-01&to=2029-01-01')).status).toBe(200);
  });

  it('is for tenant admins, as GET /api/usage is', async () => {
    const path = `/api/usage/export?${NOV}`;
    const asEditor = await get(path, editor, ada.tenantId);
    expect([asEditor.status, asEditor.body.type]).toEqual([403, '/problems/role-required']);
    const foreign = await get(path, stranger, ada.tenantId);
    expect([foreign.status, foreign.body.type]).toEqual([403, '/problems/tenant-access-denied']);
    expect((await f.call('GET', path, { tenant: ada.tenantId })).status).toBe(401);
    const client = await f.call('POST', '/api/oauth/clients', { token: ada.idToken, tenant: ada.tenantId, json: { name: 'backend', scopes: ['flags:read'] } });
    const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: client.body.clientId, client_secret: client.body.clientSecret });
    const token = (await http(`${f.url}/oauth/token`, { method: 'POST', body: form.toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } })).body.access_token;
    const res = await f.call('GET', path, { token });
    expect([res.status, res.body.type]).toEqual([403, '/problems/users-only']);
  });

  it("runs at most USAGE_EXPORTS_PER_TENANT of a tenant's exports at once (429 with Retry-After), and closes a download nobody reads after USAGE_EXPORT_IDLE_SECONDS, freeing its slot", async () => {
    const hoarder = await f.signUp();
    // About 30 MB of CSV: far more than loopback's socket buffers hold, so a download nobody reads stalls.
    await fill(hoarder.tenantId, 60_000, '2026-11-01T00:00:00Z');
    const path = `/api/usage/export?${NOV}`;
    const headers = { authorization: `Bearer ${hoarder.idToken}`, 'x-tenant-id': hoarder.tenantId };
    /**
     * A download whose body is never read: paused at once, so once the socket's buffers are full the
     * server's writes stall (a fetch body may be read ahead by the client; a paused response is not).
     */
    const hold = () =>
      new Promise<{ res: IncomingMessage; ended: Promise<boolean> }>((resolve, reject) => {
        httpGet(`${f.url}${path}`, { headers }, (res) => {
          res.pause();
          res.on('error', () => undefined); // the cut, seen below as an incomplete end
          // complete: the whole body arrived; false when the connection was cut before its end.
          const ended = new Promise<boolean>((done) => res.once('close', () => done(res.complete)));
          resolve({ res, ended });
        }).once('error', reject);
      });
    const unread = [await hold(), await hold()];
    expect(unread.map((u) => u.res.statusCode)).toEqual([200, 200]);
    const third = await get(path, hoarder);
    expect([third.status, third.body.type, third.body.per, third.body.limit, third.headers.get('retry-after')]).toEqual([429, '/problems/too-many-exports', 'tenant', 2, '30']);
    // Another tenant's export is not held back by them.
    expect((await get(path, stranger)).status).toBe(200);
    // Nobody reads the two: both are cut once idle for 2 s, and two new exports are taken at once
    // (each admitted one holds its slot, so the second is admitted only once both old ones are gone).
    const admitted = async () => {
      const deadline = Date.now() + 15_000;
      let next = await hold();
      while (next.res.statusCode === 429 && Date.now() < deadline) {
        next.res.resume();
        await new Promise((r) => setTimeout(r, 250));
        next = await hold();
      }
      return next;
    };
    const fresh = [await admitted(), await admitted()];
    expect(fresh.map((u) => u.res.statusCode)).toEqual([200, 200]);
    for (const u of fresh) u.res.destroy();
    // Read now, each old one ends before its last row (a paused socket learns of the cut only when it reads).
    for (const u of unread) u.res.resume();
    expect(await Promise.all(unread.map((u) => u.ended))).toEqual([false, false]);
  }, 60_000);

  describe('memory', () => {
    // An app of its own with the default idle cut-off: the reader below stops this whole process (the
    // app's too) for a full GC every MB, which on a loaded machine can outlast the 2 s cut-off above.
    let m: ManagementApiFixture;
    let big: SignedUp;
    beforeAll(async () => {
      m = await ManagementApiFixture.start();
      big = await m.signUp();
    }, 120_000);
    afterAll(async () => {
      await m?.stop();
    });
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const MB = 1024 * 1024;

    /**
     * Exports `month` of `big` reading the body as it comes, and measures this process's heap (the
     * app runs in it): the live heap after a full GC every ~1 MB read, and the peak seen every 5 ms.
     */
    const measure = async (query: string) => {
      gc();
      const started = Date.now();
      const base = process.memoryUsage().heapUsed;
      let peak = base;
      const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().heapUsed)), 5);
      const res = await fetch(`${m.url}/api/usage/export?${query}`, { headers: { authorization: `Bearer ${big.idToken}`, 'x-tenant-id': big.tenantId } });
      expect(res.status).toBe(200);
      let bytes = 0;
      let newlines = 0;
      let nextCheck = MB;
      let live = 0;
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        bytes += chunk.byteLength;
        for (const b of chunk) if (b === 10) newlines++;
        if (bytes >= nextCheck) {
          nextCheck += MB;
          gc();
          live = Math.max(live, process.memoryUsage().heapUsed - base);
        }
      }
      clearInterval(sampler);
      return { rows: newlines - 1, bytes, liveGrowth: live, peakGrowth: peak - base, ms: Date.now() - started };
    };

    it('exports 50,000 rows with a heap that does not grow with the row count', async () => {
      await fill(big.tenantId, 5_000, '2026-09-01T00:00:00Z', 'small', m);
      await fill(big.tenantId, 50_000, '2026-10-01T00:00:00Z', 'small', m);
      await m.sql('ANALYZE usage_ledger');
      const small = await measure('from=2026-09-01&to=2026-10-01');
      const large = await measure('from=2026-10-01&to=2026-11-01');
      const fmt = (m: typeof small) =>
        `${m.rows} rows, ${(m.bytes / MB).toFixed(1)} MB of CSV in ${m.ms} ms (GC every MB included): live heap growth after GC ${(m.liveGrowth / MB).toFixed(1)} MB, peak heap growth ${(m.peakGrowth / MB).toFixed(1)} MB`;
      process.stderr.write(`usage export memory:\n  ${fmt(small)}\n  ${fmt(large)}\n`);
      expect([small.rows, large.rows]).toEqual([5_000, 50_000]);
      // Ten times the rows (over 10 MB of text, more than the bound below lets the heap grow by): the
      // live heap stays within a few pages of the small export's. (200,000 rows, run by hand: 5.1 MB.)
      expect(large.bytes).toBeGreaterThan(10 * MB);
      expect(large.liveGrowth).toBeLessThan(small.liveGrowth + 8 * MB);
      expect(large.liveGrowth).toBeLessThan(16 * MB);
    }, 300_000);
  });
});
