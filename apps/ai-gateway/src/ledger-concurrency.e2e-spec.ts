/**
 * The ledger's balance invariants (ledger.invariants.int-spec states them for two pg pools in one
 * process) where a deployment has them: two built gateway processes on one database and one Redis,
 * paid chat completions fired at both at once through the `openai` client by several tenants, two of
 * them with credit for only a few requests, so that many requests race, on both gateways, for the
 * last of it. What each request is (tenant, gateway, prompt and system words, max_tokens, streamed or
 * not) comes from a seeded generator: a failure names its seed, and LEDGER_CONCURRENCY_SEEDS=<seed>
 * sends the same requests again (their interleaving is the machine's). Then, from the database, per
 * tenant:
 * - the balance never ends below minus one request's largest possible cost, and the credit left
 *   (balance - reserved) is never seen below 0 while the requests run;
 * - once every request has finished, nothing is reserved and no row is pending;
 * - the balance fell by exactly the sum of its rows' debits;
 * - a request answered 200 has exactly one row, `succeeded`, debited its usage's cost (above 0 when
 *   billable); a request refused 402 `insufficient_credits` has none and never reached the provider
 *   (the fake upstream's calls are the 200s, no more).
 * LEDGER_CONCURRENCY_VERBOSE=1 prints each seed's figures. Needs the build: `npx nx run ai-gateway:build`.
 */
import OpenAI, { APIError } from 'openai';
import { DATA_SOURCE } from '@flagship/persistence';
import { type BuiltProcess, type FakeModelUpstream, seededRandom, waitFor } from '@flagship/testing';
import { type GatewayE2e, NO_RATE_LIMITS, setUpGatewayE2e } from './testing/built-gateway.fixture';
import { balanceOf, createTenant, fakeChatCost as cost, type IssueToken, ledgerRows, type Sql } from './testing/gateway.fixture';

const SEEDS = (process.env['LEDGER_CONCURRENCY_SEEDS'] ?? '1,2,3').split(',').map((s) => Number(s.trim()));
const VERBOSE = Boolean(process.env['LEDGER_CONCURRENCY_VERBOSE']);
/** Requests per seed, and how many are in flight at once (over both gateways). */
const REQUESTS = 200;
const IN_FLIGHT = 24;

/** The tenants of one seed: credit for a few requests (two), for about a third of theirs, plenty, and zero-rated. */
const TENANTS: ReadonlyArray<{ name: string; zeroRated?: boolean; balance: (pick: (n: number) => number) => number }> = [
  { name: 'poor-a', balance: (pick) => 400 + pick(1600) },
  { name: 'poor-b', balance: (pick) => 400 + pick(1600) },
  { name: 'scant', balance: (pick) => 2000 + pick(4000) },
  { name: 'rich', balance: () => 1_000_000_000 },
  { name: 'zero-rated', zeroRated: true, balance: () => 0 },
];

interface Planned {
  tenant: number;
  gateway: number;
  systemWords: number;
  promptWords: number;
  maxTokens: number;
  stream: boolean;
}

interface Outcome {
  planned: Planned;
  requestId: string | null;
  status: number;
  code: string | null;
  /** The cost of the usage the answer reported (200s). */
  cost?: number;
}

const words = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag}${i}`).join(' ');

/** The most a request can cost: all its input, and max_tokens of output (the fake answers no more). */
const largestCost = (p: Planned) => cost(p.systemWords + p.promptWords, p.maxTokens);

describe('two gateway processes on one ledger, under concurrent paid requests', () => {
  let e2e: GatewayE2e;
  let fake: FakeModelUpstream;
  let issue: IssueToken;
  let ds: Sql;
  let gateways: BuiltProcess[] = [];

  beforeAll(async () => {
    e2e = await setUpGatewayE2e();
    ({ fake, issue } = e2e);
    ds = e2e.issuer.app.get<Sql>(DATA_SOURCE);
    // Two replicas on one database and one Redis prefix, as a deployment runs them.
    gateways = await Promise.all([0, 1].map(() => e2e.startGateway(NO_RATE_LIMITS)));
  }, 60_000);

  afterAll(() => e2e?.close());

  it.each(SEEDS)(
    'seed %i: no balance below minus one request, nothing held or pending, debits add up, one row per 200, none per 402',
    async (seed) => {
      const rnd = seededRandom(seed);
      const pick = (n: number) => Math.floor(rnd() * n);
      fake.resetCalls();

      const tenants: Array<(typeof TENANTS)[number] & { id: string; start: number; clients: OpenAI[] }> = [];
      for (const t of TENANTS) {
        const start = t.balance(pick);
        const id = await createTenant(ds, { plan: 'premium', entitlements: [{ productKey: 'core', tier: 'enterprise' }], balance: start, zeroRated: t.zeroRated ?? false });
        const token = await issue(id);
        const clients = gateways.map(
          (g) => new OpenAI({ baseURL: `${g.url}/v1`, apiKey: token, defaultHeaders: { 'x-service-product-key': 'core' }, maxRetries: 0, timeout: 30_000 }),
        );
        tenants.push({ ...t, id, start, clients });
      }
      const plan: Planned[] = Array.from({ length: REQUESTS }, () => ({
        tenant: pick(tenants.length),
        gateway: pick(gateways.length),
        systemWords: rnd() < 0.3 ? 1 + pick(40) : 0,
        promptWords: 1 + pick(120),
        maxTokens: 1 + pick(96),
        stream: rnd() < 0.3,
      }));

      const send = async (p: Planned): Promise<Outcome> => {
        const client = tenants[p.tenant]!.clients[p.gateway]!;
        const messages: OpenAI.ChatCompletionMessageParam[] = [
          ...(p.systemWords > 0 ? [{ role: 'system' as const, content: words(p.systemWords, 's') }] : []),
          { role: 'user', content: words(p.promptWords, 'w') },
        ];
        try {
          if (p.stream) {
            const { data, response } = await client.chat.completions
              .create({ model: 'fake-chat-1', max_tokens: p.maxTokens, messages, stream: true, stream_options: { include_usage: true } })
              .withResponse();
            let usage: OpenAI.CompletionUsage | null | undefined;
            for await (const chunk of data) usage = chunk.usage ?? usage;
            return { planned: p, requestId: response.headers.get('x-request-id'), status: response.status, code: null, cost: usage ? cost(usage.prompt_tokens, usage.completion_tokens) : undefined };
          }
          const { data, response } = await client.chat.completions.create({ model: 'fake-chat-1', max_tokens: p.maxTokens, messages }).withResponse();
          return { planned: p, requestId: response.headers.get('x-request-id'), status: response.status, code: null, cost: data.usage ? cost(data.usage.prompt_tokens, data.usage.completion_tokens) : undefined };
        } catch (err) {
          if (!(err instanceof APIError)) return { planned: p, requestId: null, status: 0, code: String(err) };
          return { planned: p, requestId: err.headers?.get('x-request-id') ?? null, status: err.status ?? 0, code: typeof err.code === 'string' ? err.code : null };
        }
      };

      // The credit left of every tenant, watched from the test's own connections while the requests run.
      const lowestLeft = new Map<string, number>();
      let running = true;
      const watch = async () => {
        while (running) {
          const rows = await ds.query<Array<{ tenant_id: string; left: string }>>(`SELECT tenant_id, balance - reserved AS left FROM credit_balances WHERE tenant_id = ANY($1)`, [
            tenants.map((t) => t.id),
          ]);
          for (const r of rows) lowestLeft.set(r.tenant_id, Math.min(lowestLeft.get(r.tenant_id) ?? Infinity, Number(r.left)));
          await new Promise((r) => setTimeout(r, 5));
        }
      };

      const startedAt = Date.now();
      const watching = watch();
      const outcomes: Outcome[] = [];
      let next = 0;
      const caller = async () => {
        while (next < plan.length) outcomes.push(await send(plan[next++]!));
      };
      await Promise.all(Array.from({ length: IN_FLIGHT }, caller));
      running = false;
      await watching;
      const loadMs = Date.now() - startedAt;

      // Settlements are written after the answer (gathered for GATEWAY_SETTLE_GATHER_MS): every request has finished once none is pending.
      const pendingLeft = async () =>
        Number((await ds.query<Array<{ n: string }>>(`SELECT count(*) AS n FROM usage_ledger WHERE tenant_id = ANY($1) AND status = 'pending'`, [tenants.map((t) => t.id)]))[0]!.n);
      await waitFor(async () => (await pendingLeft()) === 0, 10_000).catch(() => undefined);

      const violations: string[] = [];
      const figures: Record<string, unknown> = { seed, loadMs, upstreamCalls: fake.calls.chat };
      const answered = outcomes.filter((o) => o.status === 200);
      const refused = outcomes.filter((o) => o.status === 402 && o.code === 'insufficient_credits');
      for (const o of outcomes) {
        if (o.status !== 200 && !refused.includes(o)) violations.push(`a request answered neither 200 nor 402 insufficient_credits: ${JSON.stringify(o)}`);
        if (o.status === 200 && o.cost === undefined) violations.push(`a 200 without usage: ${JSON.stringify(o)}`);
        if (o.requestId === null) violations.push(`an answer without x-request-id: ${JSON.stringify(o)}`);
      }
      // The provider was called for the 200s only: never for a request refused for its credit.
      if (fake.calls.chat !== answered.length) violations.push(`the upstream was called ${fake.calls.chat} times for ${answered.length} requests answered 200`);

      for (const [i, t] of tenants.entries()) {
        const mine = outcomes.filter((o) => o.planned.tenant === i);
        const ok = answered.filter((o) => o.planned.tenant === i);
        const no = refused.filter((o) => o.planned.tenant === i);
        const rows = await ledgerRows(ds, t.id);
        const end = await balanceOf(ds, t.id);
        const maxCost = Math.max(0, ...mine.map((o) => largestCost(o.planned)));
        const debited = rows.reduce((sum, r) => sum + Number(r.debit), 0);
        const say = (what: string) => violations.push(`${t.name} (${t.id}): ${what}`);
        figures[t.name] = { start: t.start, end, lowestLeft: lowestLeft.get(t.id), maxCost, debited, answered: ok.length, refused: no.length, rows: rows.length };

        if (end.balance < -maxCost) say(`balance ${end.balance} is below minus one request's largest cost (${maxCost})`);
        if ((lowestLeft.get(t.id) ?? 0) < 0) say(`credit left (balance - reserved) was seen at ${lowestLeft.get(t.id)}`);
        if (end.reserved !== 0) say(`${end.reserved} still reserved after every request finished`);
        const pending = rows.filter((r) => r.status === 'pending');
        if (pending.length > 0) say(`${pending.length} rows still pending, e.g. ${JSON.stringify(pending[0])}`);
        if (debited !== t.start - end.balance) say(`the balance fell by ${t.start - end.balance} but its rows debited ${debited}`);

        const byRequest = new Map<string | null, typeof rows>();
        for (const r of rows) byRequest.set(r.request_id, [...(byRequest.get(r.request_id) ?? []), r]);
        for (const o of ok) {
          const its = byRequest.get(o.requestId ?? '') ?? [];
          const row = its[0];
          if (its.length !== 1 || !row) say(`request ${o.requestId} answered 200 has ${its.length} rows`);
          else if (row.status !== 'succeeded') say(`request ${o.requestId} answered 200 has a ${row.status} row`);
          else if (Number(row.debit) !== (t.zeroRated ? 0 : o.cost)) say(`request ${o.requestId} answered 200 at cost ${o.cost} was debited ${row.debit}`);
          else if (!t.zeroRated && !(Number(row.debit) > 0)) say(`billable request ${o.requestId} answered 200 was debited ${row.debit}`);
        }
        for (const o of no) if (byRequest.has(o.requestId ?? '')) say(`request ${o.requestId} refused 402 has a row: ${JSON.stringify(byRequest.get(o.requestId ?? ''))}`);
        const answeredIds = new Set(ok.map((o) => o.requestId));
        const strays = rows.filter((r) => !answeredIds.has(r.request_id));
        if (strays.length > 0) say(`${strays.length} rows belong to no request answered 200, e.g. ${JSON.stringify(strays[0])}`);
      }
      if (VERBOSE) console.log(JSON.stringify(figures));
      expect({ seed, replay: `LEDGER_CONCURRENCY_SEEDS=${seed}`, violations, ...(violations.length > 0 ? { figures } : {}) }).toEqual({
        seed,
        replay: `LEDGER_CONCURRENCY_SEEDS=${seed}`,
        violations: [],
      });

      // The run did what it is about: each poor tenant's last credit was raced for, and on both gateways.
      const poor = tenants.flatMap((t, i) => (t.name.startsWith('poor') ? [i] : []));
      const race = (of: (o: Outcome) => boolean) => ({
        answered: answered.filter(of).length > 0,
        refused: refused.filter(of).length > 0,
      });
      for (const i of poor) expect({ seed, tenant: tenants[i]!.name, ...race((o) => o.planned.tenant === i) }).toEqual({ seed, tenant: tenants[i]!.name, answered: true, refused: true });
      for (const g of gateways.keys()) {
        expect({ seed, gateway: g, ...race((o) => poor.includes(o.planned.tenant) && o.planned.gateway === g) }).toEqual({ seed, gateway: g, answered: true, refused: true });
      }
    },
    40_000,
  );
});
