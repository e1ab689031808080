// Lints source text as if it stood at a given path, with the repository's eslint.config.mjs:
//   echo '[{"path":"libs/domain/src/x.ts","code":"import { compileFlag } from \"@flagship/flag-evaluation\";"}]' | node tools/dev/lint-samples.mjs
// Prints, per sample, the rule ids and messages reported. Used by module-boundaries.int-spec.ts.
import { ESLint } from 'eslint';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
let input = '';
for await (const chunk of process.stdin) input += chunk;
const samples = JSON.parse(input);
const eslint = new ESLint({ cwd: root });
const results = [];
for (const { path, code } of samples) {
  const [result] = await eslint.lintText(code, { filePath: join(root, path) });
  results.push({ path, messages: (result?.messages ?? []).map((m) => ({ ruleId: m.ruleId, message: m.message })) });
}
// On a line of its own: Nx's rule may print its own notice first.
process.stdout.write(`\n${JSON.stringify(results)}\n`);
