/**
 * HTTP benchmark of the OAuth endpoints on loopback, against a management-api-like app started in
 * this process (platform modules + OAuthFeatureModule) on its own test database and Redis prefix.
 *
 *   TS_NODE_PROJECT=tsconfig.json node -r ts-node/register/transpile-only -r tsconfig-paths/register \
 *     tools/bench/oauth.ts [secondsPerCase] [connections]
 *
 * Cases, one after the other, each bounded (default 5 s, 16 connections):
 *   GET /healthz                  the baseline: the same app and stack, no work
 *   GET /bench/client-token       a route behind ClientTokenGuard (passport-jwt, ES256 verify, revocation map)
 *   GET /bench/verify-bearer      the same check through AccessTokenVerifier (jose), as a combined guard does it
 *   POST /oauth/token             client_secret_post: one scrypt (N=2^14, r=8, p=1) and one ES256 signature
 * Prints requests/s, p50 and p99 latency, and each case's throughput as a fraction of the baseline,
 * so figures from different machines compare. Needs Postgres and Redis (as the tests do).
 */
import 'reflect-metadata';
import { Controller, type DynamicModule, Get, Module, Req, UseGuards } from '@nestjs/common';
import type { Request } from 'express';
import autocannon from 'autocannon';
import type { DataSource } from 'typeorm';
import { commonEnv, loadConfig, portEnv } from '@flagship/config';
import { AccessTokenVerifier, ClientTokenGuard, Public, verifyBearer } from '@flagship/oauth';
import { DATA_SOURCE } from '@flagship/persistence';
import { bootstrapService, platformModules } from '@flagship/service-kit';
import { createTestEnvironment, freePort } from '@flagship/testing';
import { OAuthClientsService } from '../../apps/management-api/src/oauth/oauth-clients.service';
import { OAUTH_FEATURE_ENTITIES, OAuthFeatureModule } from '../../apps/management-api/src/oauth/oauth-feature.module';

const SECONDS = Number(process.argv[2] ?? process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = Number(process.argv[3] ?? process.env.BENCH_CONNECTIONS ?? 16);

@Controller('bench')
class BenchController {
  constructor(private readonly verifier: AccessTokenVerifier) {}

  @Get('client-token')
  @UseGuards(ClientTokenGuard)
  ok(): { ok: true } {
    return { ok: true };
  }

  /** What the lead's combined guard will do: the jose verifier called directly. */
  @Get('verify-bearer')
  @Public()
  async direct(@Req() req: Request): Promise<{ ok: true }> {
    await verifyBearer(req, this.verifier);
    return { ok: true };
  }
}

function benchModule(env: NodeJS.ProcessEnv, baseUrl: string): DynamicModule {
  const config = loadConfig(env, { ...commonEnv, ...portEnv(0) });
  @Module({ controllers: [BenchController] })
  class BenchModule {}
  return {
    module: BenchModule,
    imports: [
      ...platformModules(config, { serviceName: 'management-api', entities: OAUTH_FEATURE_ENTITIES }),
      OAuthFeatureModule.forRoot({ oauth: { issuer: baseUrl, issuing: {} }, publicBaseUrl: baseUrl }),
    ],
  };
}

interface Row {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  ok: number;
  failed: number;
}

async function run(name: string, options: autocannon.Options): Promise<Row> {
  // A short warm-up (JIT, pools) that is not measured.
  await autocannon({ ...options, duration: 1, connections: Math.min(4, CONNECTIONS) });
  const r = await autocannon({ ...options, duration: SECONDS, connections: CONNECTIONS });
  return { name, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, ok: r['2xx'], failed: r.non2xx + r.errors + r.timeouts };
}

async function main(): Promise<void> {
  const te = await createTestEnvironment();
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const app = await bootstrapService(benchModule(te.env, baseUrl), { port, host: '127.0.0.1', handleSignals: false });
  try {
    const ds = app.get<DataSource>(DATA_SOURCE);
    const [{ id: tenantId }] = await ds.query(`INSERT INTO tenants (name, primary_email) VALUES ('Bench', 'bench@example.test') RETURNING id`);
    const client = await app.get(OAuthClientsService).create(tenantId, null, { name: 'bench', scopes: ['flags:read', 'flags:evaluate'], productKeys: ['core'] }, false);
    const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: client.clientId, client_secret: client.clientSecret }).toString();
    const tokenRes = await fetch(`${baseUrl}/oauth/token`, { method: 'POST', body: form, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    if (tokenRes.status !== 200) throw new Error(`token endpoint answered ${tokenRes.status}`);
    const { access_token: token } = (await tokenRes.json()) as { access_token: string };

    const rows: Row[] = [];
    rows.push(await run('GET /healthz (baseline)', { url: `${baseUrl}/healthz` }));
    const bearer = { authorization: `Bearer ${token}` };
    rows.push(await run('GET /bench/client-token (passport)', { url: `${baseUrl}/bench/client-token`, headers: bearer }));
    rows.push(await run('GET /bench/verify-bearer (jose)', { url: `${baseUrl}/bench/verify-bearer`, headers: bearer }));
    rows.push(
      await run('POST /oauth/token (scrypt + ES256)', {
        url: `${baseUrl}/oauth/token`,
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: form,
      }),
    );

    const base = rows[0].rps;
    console.log(`node ${process.version}, ${SECONDS} s per case, ${CONNECTIONS} connections, loopback, one process\n`);
    console.log(`${'case'.padEnd(36)} ${'req/s'.padStart(9)} ${'p50 ms'.padStart(7)} ${'p99 ms'.padStart(7)} ${'2xx'.padStart(8)} ${'other'.padStart(6)} ${'vs baseline'.padStart(12)}`);
    for (const r of rows) {
      console.log(
        `${r.name.padEnd(36)} ${r.rps.toFixed(0).padStart(9)} ${String(r.p50).padStart(7)} ${String(r.p99).padStart(7)} ${String(r.ok).padStart(8)} ${String(r.failed).padStart(6)} ${(r.rps / base).toFixed(3).padStart(12)}`,
      );
    }
  } finally {
    await app.close();
    await te.teardown();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
