// Jest runs only the Node-side tests here (the browser e2e and the bundle budget); the component
// tests are Vitest's (`nx run console:test`).
const preset = require('../../jest.preset.js');
module.exports = { ...preset(__dirname), testMatch: preset.testMatchUnder('e2e') };
