import { lintOpenApi } from '@flagship/testing';

/**
 * The checked-in document passes `redocly lint` with the recommended rules (redocly.yaml says which
 * are relaxed and why): summaries, declared security, path parameters, problem bodies on errors.
 */
describe('management-api OpenAPI document lint', () => {
  it('has no errors and no warnings', () => {
    const report = lintOpenApi();
    const found = report.problems.map((p) => `${p.severity} ${p.ruleId} at ${p.location[0]?.pointer ?? '?'}: ${p.message}`);
    expect(found).toEqual([]);
    expect({ errors: report.errors, warnings: report.warnings }).toEqual({ errors: 0, warnings: 0 });
  });

  it('reports a broken document (the check can fail)', () => {
    const broken = lintOpenApi(`${__dirname}/testing/openapi-lint.fixture.json`);
    expect(broken.problems.map((p) => p.ruleId).sort()).toEqual(['operation-4xx-response', 'operation-summary', 'security-defined']);
  });
});
