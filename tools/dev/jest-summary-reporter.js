const fs = require('node:fs');
const path = require('node:path');

const SLOWEST = 15;

// Prints the slowest test files with their seconds (so the suite's time is measured, not guessed),
// then one plain closing line ("tests: N passed, N failed, N skipped") after jest's own summary, the
// form CI reads whatever the runner.
class PlainSummaryReporter {
  constructor(globalConfig) {
    this.rootDir = globalConfig.rootDir;
  }

  onRunComplete(_contexts, results) {
    const files = results.testResults
      .map((r) => ({ file: path.relative(this.rootDir, r.testFilePath), seconds: (r.perfStats.end - r.perfStats.start) / 1000 }))
      .filter((f) => Number.isFinite(f.seconds))
      .sort((a, b) => b.seconds - a.seconds);
    // Every file's seconds, slowest first, for comparing two runs.
    fs.mkdirSync(path.join(__dirname, '../../tmp'), { recursive: true });
    fs.writeFileSync(path.join(__dirname, '../../tmp/test-times.json'), `${JSON.stringify(files, null, 1)}\n`);
    if (files.length > 1) {
      const total = files.reduce((sum, f) => sum + f.seconds, 0);
      const lines = files.slice(0, SLOWEST).map((f) => `${f.seconds.toFixed(1).padStart(7)} s  ${f.file}`);
      process.stdout.write(`\nslowest ${Math.min(SLOWEST, files.length)} of ${files.length} test files (${total.toFixed(0)} s in files in all):\n${lines.join('\n')}\n`);
    }
    const failed = results.numFailedTests + results.numRuntimeErrorTestSuites;
    const skipped = results.numPendingTests + results.numTodoTests;
    const line = `tests: ${results.numPassedTests} passed, ${failed} failed, ${skipped} skipped`;
    process.stdout.write(`\n${line}\n`);
    // .ci/run repeats it as its very last line.
    fs.writeFileSync(path.join(__dirname, '../../tmp/test-summary.txt'), `${line}\n`);
  }
}
module.exports = PlainSummaryReporter;
