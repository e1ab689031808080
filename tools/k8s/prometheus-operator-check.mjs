/**
 * The Prometheus Operator's custom resources (PrometheusRule, and whatever else of
 * monitoring.coreos.com manifest-checks.ts has no schema of its own for) against the operator's CRD
 * schemas, as @kubernetes-models/prometheus-operator ships them: types, enums, required fields, and
 * unknown (misspelt) fields, which the API server's strict field validation refuses. That package is
 * ES modules only and jest runs CommonJS, so manifest-checks.ts runs this as a process:
 * objects as a JSON array on stdin, problems as a JSON array of strings on stdout.
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { unknownFields } = require('./unknown-fields.js');

let input = '';
for await (const chunk of process.stdin) input += chunk;
const problems = [];
for (const o of JSON.parse(input)) {
  const id = `${o.kind}/${o.metadata?.name}`;
  let Model;
  try {
    Model = (await import(`@kubernetes-models/prometheus-operator/${o.apiVersion}/${o.kind}`))[o.kind];
  } catch {
    Model = undefined;
  }
  if (!Model) {
    problems.push(`${id}: no Prometheus Operator schema for ${o.apiVersion} ${o.kind}`);
    continue;
  }
  try {
    new Model(o).validate();
  } catch (err) {
    problems.push(`${id}: ${err.message}`);
  }
  for (const path of unknownFields(Model, o)) problems.push(`${id}: unknown field ${path}`);
}
process.stdout.write(JSON.stringify(problems));
