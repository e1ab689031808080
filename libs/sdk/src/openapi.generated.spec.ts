import { readFileSync } from 'node:fs';
import { generateOpenApiTypes, OPENAPI_SDK_TYPES } from '@flagship/testing';

/**
 * openapi.generated.ts is openapi-typescript's rendering of the checked-in document, so
 * openapi.conformance.ts (compiled by `npm run typecheck`) checks the SDK against the real document.
 */
describe('SDK types generated from the OpenAPI document', () => {
  it('are up to date (npm run openapi rewrites them)', () => {
    expect(readFileSync(OPENAPI_SDK_TYPES, 'utf8')).toBe(generateOpenApiTypes());
  });
});
