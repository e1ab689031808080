import { readFileSync } from 'node:fs';
import { lintOpenApi, OPENAPI_DOCUMENT } from '@flagship/testing';

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

  it('describes every error answer as a problem (422 with errors), but the RFC 6749 errors of the token endpoint', () => {
    type Response = { content?: Record<string, { schema?: { $ref?: string } }> };
    const doc = JSON.parse(readFileSync(OPENAPI_DOCUMENT, 'utf8')) as { paths: Record<string, Record<string, { responses: Record<string, Response> }>> };
    const schemas: string[] = [];
    for (const [path, operations] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(operations)) {
        for (const [status, response] of Object.entries(op.responses)) {
          if (Number(status) < 400) continue;
          const [[type, media]] = Object.entries(response.content ?? { none: {} });
          schemas.push(`${method.toUpperCase()} ${path} ${status} ${type} ${media!.schema?.$ref ?? 'no schema'}`);
        }
      }
    }
    const oauthErrors = (line: string) => /^POST \/oauth\/token 40[01] application\/json #\/components\/schemas\/OAuthErrorDto$/.test(line);
    const problems = (line: string) => / (?!422)\d{3} application\/problem\+json #\/components\/schemas\/Problem$/.test(line) || / 422 application\/problem\+json #\/components\/schemas\/ValidationProblem$/.test(line);
    expect(schemas.filter((line) => !oauthErrors(line) && !problems(line))).toEqual([]);
    expect(schemas.filter(oauthErrors)).toHaveLength(2);
    expect(schemas.length).toBeGreaterThan(100);
  });
});
