// One jest run over every project, so `npm test` prints one summary.
const fs = require('node:fs');
const path = require('node:path');

const projects = [];
for (const group of ['apps', 'libs', 'tools']) {
  const dir = path.join(__dirname, group);
  if (!fs.existsSync(dir)) continue;
  for (const name of fs.readdirSync(dir).sort()) {
    if (fs.existsSync(path.join(dir, name, 'jest.config.js'))) projects.push(`<rootDir>/${group}/${name}`);
  }
}

/** @type {import('jest').Config} */
module.exports = {
  projects,
  // A global option: in a project's config jest ignores it.
  testTimeout: 30000,
  reporters: ['default', '<rootDir>/tools/dev/jest-summary-reporter.js'],
  // Also global: on a fresh clone, start the files that start apps first (tools/dev/jest-sequencer.js).
  testSequencer: '<rootDir>/tools/dev/jest-sequencer.js',
  // Global: the run's test databases are dropped together when it ends (libs/testing/src/test-database-runs.ts).
  globalSetup: '<rootDir>/tools/dev/jest-global-setup.ts',
  globalTeardown: '<rootDir>/tools/dev/jest-global-teardown.ts',
};
