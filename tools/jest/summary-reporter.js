// Prints the plain final line "N passed, N failed" after jest's own summary.
const fs = require("node:fs");

module.exports = class SummaryLineReporter {
  onRunComplete(_contexts, results) {
    const skipped = results.numPendingTests + results.numTodoTests;
    // A suite that crashed before running any test counts as a failure.
    const failed = results.numFailedTests + results.numRuntimeErrorTestSuites;
    const line = `${results.numPassedTests} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ""}\n`;
    process.once("exit", () => fs.writeSync(1, line));
  }
};
