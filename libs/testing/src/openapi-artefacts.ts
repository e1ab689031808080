import { execFileSync, spawnSync } from 'node:child_process';
import { join } from 'node:path';

const ROOT = join(__dirname, '../../..');

/** The checked-in management API document, `npm run openapi` rewrites it. */
export const OPENAPI_DOCUMENT = join(ROOT, 'openapi/management-api.openapi.json');
/** TypeScript types generated from that document, checked in next to the SDK they check. */
export const OPENAPI_SDK_TYPES = join(ROOT, 'libs/sdk/src/openapi.generated.ts');

const bin = (pkg: string, file: string): string => join(ROOT, 'node_modules', pkg, file);

// The CLIs would otherwise look for updates and report usage over the network.
const QUIET = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' };

const HEADER = '// Generated from openapi/management-api.openapi.json by openapi-typescript: `npm run openapi` rewrites it.\n';

/*
 * openapi-typescript renders the recursive JsonValue component as an interface member that refers to
 * itself through an array, which TypeScript refuses (TS2502); a type alias may, so the member names one.
 */
const JSON_VALUE_MEMBER = /^( {8})JsonValue: string \| number \| \(boolean \| null\) \| components\["schemas"\]\["JsonValue"\]\[\] \| \{\n {12}\[key: string\]: components\["schemas"\]\["JsonValue"\];\n {8}\};$/m;
const JSON_VALUE_ALIAS = '/** Any JSON value (the JsonValue component). */\nexport type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };\n';

/** openapi-typescript's rendering of the document (a child process: the package is ES modules only). */
export function generateOpenApiTypes(document = OPENAPI_DOCUMENT): string {
  const out = execFileSync(process.execPath, [bin('openapi-typescript', 'bin/cli.js'), document, '--default-non-nullable', 'false'], { env: QUIET, encoding: 'utf8', cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  if (!JSON_VALUE_MEMBER.test(out)) throw new Error('openapi-typescript no longer renders the JsonValue component as expected: update JSON_VALUE_MEMBER');
  return HEADER + JSON_VALUE_ALIAS + out.replace(JSON_VALUE_MEMBER, '$1JsonValue: JsonValue;');
}

export interface LintProblem {
  ruleId: string;
  severity: 'error' | 'warn';
  message: string;
  location: Array<{ pointer?: string }>;
}

/** `redocly lint` with the checked-in redocly.yaml (the recommended rules); every problem it reports. */
export function lintOpenApi(document = OPENAPI_DOCUMENT): { errors: number; warnings: number; problems: LintProblem[] } {
  const run = spawnSync(process.execPath, [bin('@redocly/cli', 'bin/cli.js'), 'lint', '--config', join(ROOT, 'redocly.yaml'), '--format=json', document], { env: QUIET, encoding: 'utf8', cwd: ROOT });
  const json = run.stdout.slice(run.stdout.indexOf('{'));
  if (!json) throw new Error(`redocly lint printed no report (exit ${run.status}): ${run.stderr}`);
  const report = JSON.parse(json) as { totals: { errors: number; warnings: number }; problems: LintProblem[] };
  return { ...report.totals, problems: report.problems };
}
