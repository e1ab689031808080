import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

interface Sample {
  path: string;
  code: string;
}

/**
 * The module-boundary rules of eslint.config.mjs fire on violating samples, with no Nx project graph
 * (an empty workspace-data directory, as a bare `eslint` in an editor sees it): they are
 * no-restricted-imports rules, not Nx's graph-based one, which then skips.
 */
function lint(samples: Sample[]): Map<string, string[]> {
  const noGraph = mkdtempSync(join(tmpdir(), 'nx-no-graph-'));
  try {
    const out = execFileSync(process.execPath, [join(__dirname, 'lint-samples.mjs')], {
      input: JSON.stringify(samples),
      encoding: 'utf8',
      cwd: join(__dirname, '../..'),
      env: { ...process.env, NX_WORKSPACE_DATA_DIRECTORY: noGraph, NX_DAEMON: 'false' },
    });
    const results = JSON.parse(out.trim().split('\n').at(-1)!) as Array<{ path: string; messages: Array<{ ruleId: string | null; message: string }> }>;
    // Only import restrictions: an unused import in a one-line sample is beside the point.
    const isBoundary = (ruleId: string | null): boolean => ruleId === 'flagship/scope-boundaries' || ruleId?.endsWith('no-restricted-imports') === true;
    return new Map(results.map((r) => [r.path, r.messages.filter((m) => isBoundary(m.ruleId)).map((m) => m.message)]));
  } finally {
    rmSync(noGraph, { recursive: true, force: true });
  }
}

describe('module boundaries (eslint.config.mjs), without a project graph', () => {
  const samples: Record<string, Sample> = {
    domainImportsEvaluator: { path: 'libs/domain/src/boundary-sample-a.ts', code: "import { compileFlag } from '@flagship/flag-evaluation';\nexport const x = compileFlag;\n" },
    domainImportsNest: { path: 'libs/domain/src/boundary-sample-b.ts', code: "import { Injectable } from '@nestjs/common';\nexport const x = Injectable;\n" },
    evaluatorImportsPersistence: { path: 'libs/flag-evaluation/src/boundary-sample-a.ts', code: "import { TransactionRunner } from '@flagship/persistence';\nexport const x = TransactionRunner;\n" },
    evaluatorImportsTypeorm: { path: 'libs/flag-evaluation/src/boundary-sample-b.ts', code: "import { DataSource } from 'typeorm';\nexport const x = DataSource;\n" },
    evaluatorImportsDomain: { path: 'libs/flag-evaluation/src/boundary-sample-c.ts', code: "import { FLAG_TYPES } from '@flagship/domain';\nexport const x = FLAG_TYPES;\n" },
    serviceImportsTesting: { path: 'apps/management-api/src/flags/boundary-sample.service.ts', code: "import { createTestEnvironment } from '@flagship/testing';\nexport const x = createTestEnvironment;\n" },
    libImportsTesting: { path: 'libs/oauth/src/boundary-sample.ts', code: "import { createTestEnvironment } from '@flagship/testing';\nexport const x = createTestEnvironment;\n" },
    specImportsTesting: { path: 'apps/management-api/src/flags/boundary-sample.int-spec.ts', code: "import { createTestEnvironment } from '@flagship/testing';\nexport const x = createTestEnvironment;\n" },
    serviceTakesDataSource: { path: 'apps/management-api/src/flags/boundary-sample2.service.ts', code: "import { DATA_SOURCE } from '@flagship/persistence';\nexport const x = DATA_SOURCE;\n" },
    serviceTakesRunner: { path: 'apps/management-api/src/flags/boundary-sample3.service.ts', code: "import { TransactionRunner } from '@flagship/persistence';\nexport const x = TransactionRunner;\n" },
    serviceImportsTypeorm: { path: 'apps/management-api/src/flags/boundary-sample4.service.ts', code: "import { In } from 'typeorm';\nexport const x = In;\n" },
    orepImportsLedger: { path: 'apps/orep-server/src/boundary-sample.ts', code: "import { CreditsRepository } from '@flagship/ledger';\nexport const x = CreditsRepository;\n" },
    orepImportsOauth: { path: 'apps/orep-server/src/boundary-sample2.ts', code: "import { hashSecret } from '@flagship/oauth';\nexport const x = hashSecret;\n" },
    orepImportsFlagStore: { path: 'apps/orep-server/src/boundary-sample3.ts', code: "import { FlagStore } from '@flagship/flag-store';\nexport const x = FlagStore;\n" },
    gatewayImportsFlagStore: { path: 'apps/ai-gateway/src/boundary-sample.ts', code: "import { FlagStore } from '@flagship/flag-store';\nexport const x = FlagStore;\n" },
    gatewayImportsSdk: { path: 'apps/ai-gateway/src/boundary-sample3.ts', code: "import * as sdk from '@flagship/sdk';\nexport const x = sdk;\n" },
    gatewayImportsLedger: { path: 'apps/ai-gateway/src/boundary-sample2.ts', code: "import { CreditsRepository } from '@flagship/ledger';\nexport const x = CreditsRepository;\n" },
    flagStoreImportsBilling: { path: 'libs/flag-store/src/boundary-sample.ts', code: "import * as billing from '@flagship/billing';\nexport const x = billing;\n" },
    ledgerImportsFlagStore: { path: 'libs/ledger/src/boundary-sample.ts', code: "export { FlagStore } from '@flagship/flag-store';\n" },
    sharedImportsLedger: { path: 'libs/persistence/src/boundary-sample.ts', code: "const ledger = require('@flagship/ledger');\nexport const x = ledger;\n" },
    sharedImportsFlagEvaluation: { path: 'libs/persistence/src/boundary-sample2.ts', code: "import { FLAG_TYPES } from '@flagship/flag-evaluation';\nexport const x = FLAG_TYPES;\n" },
    consoleImportsServiceKit: { path: 'apps/console/src/boundary-sample.tsx', code: "import { startService } from '@flagship/service-kit';\nexport const x = startService;\n" },
    consoleImportsSdk: { path: 'apps/console/src/boundary-sample2.tsx', code: "import * as sdk from '@flagship/sdk';\nexport const x = sdk;\n" },
  };
  let found: Map<string, string[]>;

  beforeAll(() => {
    found = lint(Object.values(samples));
  }, 120_000);

  const messages = (name: keyof typeof samples): string[] => found.get(samples[name]!.path) ?? [];

  it('keeps the domain free of other libs and of frameworks', () => {
    expect(messages('domainImportsEvaluator')).toEqual([expect.stringContaining('The domain is the base')]);
    expect(messages('domainImportsNest')).toEqual([expect.stringContaining('The domain stays pure')]);
  });

  it('lets the evaluator depend on the domain only', () => {
    expect(messages('evaluatorImportsPersistence')).toEqual([expect.stringContaining('depends on the domain only')]);
    expect(messages('evaluatorImportsTypeorm')).toEqual([expect.stringContaining('The evaluator stays pure')]);
    expect(messages('evaluatorImportsDomain')).toEqual([]);
  });

  it('keeps @flagship/testing out of production code, apps and libs, but not out of tests', () => {
    expect(messages('serviceImportsTesting')).toEqual([expect.stringContaining('Test helpers stay out of production code')]);
    expect(messages('libImportsTesting')).toEqual([expect.stringContaining('Test helpers stay out of production code')]);
    expect(messages('specImportsTesting')).toEqual([]);
  });

  it('keeps each app to the lib scopes its tag allows', () => {
    expect(messages('orepImportsLedger')).toEqual([expect.stringContaining('apps/orep-server (scope:orep-server) may not import @flagship/ledger')]);
    expect(messages('orepImportsOauth')).toEqual([expect.stringContaining('may not import @flagship/oauth')]);
    expect(messages('orepImportsFlagStore')).toEqual([]);
    // A route bound to a flag is routed by the one flag store (CONTRACT.md section 11); the published client is still not the gateway's.
    expect(messages('gatewayImportsFlagStore')).toEqual([]);
    expect(messages('gatewayImportsSdk')).toEqual([expect.stringContaining('apps/ai-gateway (scope:ai-gateway) may not import @flagship/sdk')]);
    expect(messages('gatewayImportsLedger')).toEqual([]);
    expect(messages('consoleImportsServiceKit')).toEqual([expect.stringContaining('the console runs in a browser')]);
    expect(messages('consoleImportsSdk')).toEqual([]);
  });

  it('keeps the flags, money and shared libs out of each other', () => {
    expect(messages('flagStoreImportsBilling')).toEqual([expect.stringContaining('libs/flag-store (scope:flags) may not import @flagship/billing')]);
    expect(messages('ledgerImportsFlagStore')).toEqual([expect.stringContaining('libs/ledger (scope:billing) may not import @flagship/flag-store')]);
    expect(messages('sharedImportsLedger')).toEqual([expect.stringContaining('a shared lib imports only shared libs')]);
    expect(messages('sharedImportsFlagEvaluation')).toEqual([]);
  });

  it('keeps TypeORM and the DataSource out of services: they take the TransactionRunner', () => {
    expect(messages('serviceTakesDataSource')).toEqual([expect.stringContaining('TransactionRunner')]);
    expect(messages('serviceTakesRunner')).toEqual([]);
    expect(messages('serviceImportsTypeorm')).toEqual([expect.stringContaining('TypeORM belongs in')]);
  });
});
