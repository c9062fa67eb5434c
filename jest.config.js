// One jest run for the whole workspace: a single summary line at the end.
// One project per registered service (services.json), plus the shared libraries (contract, kit, bus), tools,
// the Helm chart (chart), the SDK (client), e2e and the static checks (checks: each step of `npm run check` as one test).
const { services } = require("./services.json");

const swc = [
  "@swc/jest",
  {
    jsc: { parser: { syntax: "typescript" }, target: "es2022" },
    module: { type: "commonjs" },
  },
];
const project = (displayName, rootDir, extra = {}) => ({
  displayName,
  rootDir,
  testEnvironment: "node",
  transform: { "^.+\\.ts$": swc },
  testMatch: ["<rootDir>/**/*.test.ts"],
  testPathIgnorePatterns: ["/node_modules/"],
  ...extra,
});

/** @type {import('jest').Config} */
module.exports = {
  reporters: ["default", "<rootDir>/tools/jest/summary-reporter.js"],
  globalSetup: "<rootDir>/tools/jest/global-setup.mjs",
  globalTeardown: "<rootDir>/tools/jest/global-teardown.mjs",
  testSequencer: "<rootDir>/tools/jest/sequencer.js",
  testTimeout: 30000,
  maxWorkers: 2,
  projects: [
    project("contract", "<rootDir>/services/contract"),
    project("kit", "<rootDir>/services/kit"),
    // The bus's Kafka tests start librdkafka's mock cluster: one message when it cannot run here.
    project("bus", "<rootDir>/packages/bus", { globalSetup: `${__dirname}/tools/jest/kafka-mock-check.mjs` }),
    ...services.map((s) => project(s.name, `<rootDir>/${s.folder}`)),
    project("tools", "<rootDir>/tools", {
      testPathIgnorePatterns: ["/node_modules/", "/jest/", "/checks/", "<rootDir>/chart/"],
    }),
    // The Helm chart's tests run helm lint and helm template: the project's globalSetup fetches the pinned helm.
    project("chart", "<rootDir>/tools/chart", { globalSetup: `${__dirname}/tools/jest/helm-setup.mjs` }),
    project("client", "<rootDir>/packages/client"),
    project("cli", "<rootDir>/packages/cli"),
    // testTimeout is a global option: the e2e project sets its own (hooks included) in a setup file.
    project("e2e", "<rootDir>/test-e2e", { setupFilesAfterEnv: ["<rootDir>/support/timeout.ts"] }),
    project("checks", "<rootDir>/tools/checks"),
  ],
};
