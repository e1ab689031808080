// Jest runs only the Node-side tests here (the browser e2e and the bundle budget); the component
// tests are Vitest's (`nx run console:test`).
const base = require('../../jest.preset.js')(__dirname);
module.exports = { ...base, testMatch: ['<rootDir>/e2e/**/*.spec.ts', '<rootDir>/e2e/**/*.e2e-spec.ts'] };
