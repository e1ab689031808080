// Jest runs only the Node-side tests here (the browser e2e and the bundle budget); the component
// tests are Vitest's (`nx run console:test`). The browser specs share one started management-api and
// one Chromium (e2e/shared-stack.fixture.ts), started and stopped by the global setup and teardown.
const preset = require('../../jest.preset.js');
module.exports = {
  ...preset(__dirname),
  testMatch: preset.testMatchUnder('e2e'),
  globalSetup: '<rootDir>/e2e/global-setup.ts',
  globalTeardown: '<rootDir>/e2e/global-teardown.ts',
};
