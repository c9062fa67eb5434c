import fs from "node:fs";
import js from "@eslint/js";
import tseslint from "typescript-eslint";
import globals from "globals";

// Package boundaries (docs/decisions/0015-package-boundaries.md, 0048-kit-entries-and-bus-package.md): a
// package is imported through its exports, never its src/; no service imports another service; the contract
// depends on nothing; the bus imports the kit through its base only, and the base never imports the bus.
const { services } = JSON.parse(fs.readFileSync(new URL("./services.json", import.meta.url), "utf8"));
const packageName = (folder) =>
  JSON.parse(fs.readFileSync(new URL(`./${folder}/package.json`, import.meta.url), "utf8")).name;
const servicePackages = services.map((s) => ({ folder: s.folder, kind: s.kind, pkg: packageName(s.folder) }));
const NO_SRC = {
  group: ["@dpp/*/src", "@dpp/*/src/*"],
  message: "Import a workspace package through its exports (package.json), not its src/.",
};
const restrict = (patterns) => ["error", { patterns }];
const otherServices = (pkg) => ({
  group: servicePackages.filter((o) => o.pkg !== pkg).map((o) => o.pkg),
  message: "A service does not import another service: call it over gRPC (its proto in @dpp/proto).",
});
const BUS_ON_BASE =
  "@dpp/bus imports the kit through @dpp/kit/base only: the rest of the kit imports @dpp/bus.";

export default tseslint.config(
  {
    ignores: [
      "**/node_modules/**",
      "**/dist/**",
      "proto/src/gen/**",
      "services/gateway/src/**/*.generated.ts",
      ".dpp/**",
      "coverage/**",
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node, ...globals.jest } },
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/no-explicit-any": "off",
      "no-console": "off",
      "no-restricted-imports": restrict([NO_SRC]),
    },
  },
  // A service asks another over gRPC; it never imports its code.
  ...servicePackages.map(({ folder, pkg }) => ({
    files: [`${folder}/**/*.ts`],
    rules: { "no-restricted-imports": restrict([NO_SRC, otherServices(pkg)]) },
  })),
  // A service's gateway module (services/<name>/gateway/) runs in the gateway: it is written with the gateway's
  // module API only, and imports neither another service nor its own service's code (it calls it over gRPC).
  ...servicePackages
    .filter((s) => s.pkg !== "@dpp/gateway")
    .map(({ folder, pkg }) => ({
      files: [`${folder}/gateway/**/*.ts`],
      rules: {
        "no-restricted-imports": [
          "error",
          {
            paths: [{ name: "@dpp/gateway", message: "A gateway module uses @dpp/gateway/modules only." }],
            patterns: [
              NO_SRC,
              {
                group: [
                  ...servicePackages.filter((o) => o.pkg !== "@dpp/gateway").map((o) => o.pkg),
                  "@dpp/gateway/*",
                  "!@dpp/gateway/modules",
                ],
                message: "A gateway module uses @dpp/gateway/modules and calls services over gRPC.",
              },
              {
                group: ["../src", "../src/*", "../migrations", "../migrations/*"],
                message: `${pkg}'s gateway module runs in the gateway, not in the service.`,
              },
            ],
          },
        ],
      },
    })),
  // A gRPC service's own code uses the kit's public entry (docs/service-authors.md); the kit's plumbing and the
  // bus transports are for the gateway's edge, the tools and tests.
  ...servicePackages
    .filter(({ kind }) => kind !== "gateway")
    .map(({ folder, pkg }) => ({
      files: [`${folder}/src/**/*.ts`, `${folder}/migrations/**/*.ts`],
      ignores: ["**/*.test.ts"],
      rules: {
        "no-restricted-imports": restrict([
          NO_SRC,
          otherServices(pkg),
          {
            group: ["@dpp/kit/*", "!@dpp/kit/tracing", "@dpp/bus", "@dpp/bus/*"],
            message:
              "A service's own code imports @dpp/kit (and @dpp/kit/tracing); the kit's plumbing and the bus are for tools and tests (docs/service-authors.md).",
          },
        ]),
      },
    })),
  // The shared libraries never depend on a service; the contract depends on no workspace package.
  {
    files: ["services/kit/**/*.ts"],
    rules: {
      "no-restricted-imports": restrict([
        NO_SRC,
        { group: servicePackages.map((o) => o.pkg), message: "The kit does not depend on a service." },
      ]),
    },
  },
  // The bus (packages/bus) is built on the kit's base only, which never imports the bus; the rest of the kit
  // (the service template, the outbox relay) imports the bus. So their modules never load each other in a cycle.
  {
    files: ["packages/bus/src/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          paths: [{ name: "@dpp/kit", message: BUS_ON_BASE }],
          patterns: [
            NO_SRC,
            { group: ["@dpp/kit/*", "!@dpp/kit/base"], message: BUS_ON_BASE },
            { group: servicePackages.map((o) => o.pkg), message: "The bus does not depend on a service." },
          ],
        },
      ],
    },
  },
  {
    files: ["packages/bus/test/**/*.ts"],
    rules: {
      "no-restricted-imports": restrict([
        NO_SRC,
        { group: servicePackages.map((o) => o.pkg), message: "The bus does not depend on a service." },
      ]),
    },
  },
  {
    files: ["services/kit/src/{base,config,logger,db,jobs,events}.ts"],
    rules: {
      "no-restricted-imports": restrict([
        NO_SRC,
        { group: servicePackages.map((o) => o.pkg), message: "The kit does not depend on a service." },
        {
          group: ["@dpp/bus", "@dpp/bus/*"],
          message:
            "@dpp/kit/base (base.ts and the modules it exports) is what @dpp/bus is built on: it never imports it.",
        },
      ]),
    },
  },
  {
    files: ["services/contract/**/*.ts"],
    rules: {
      "no-restricted-imports": restrict([
        { group: ["@dpp/*"], message: "The contract depends on no workspace package." },
      ]),
    },
  },
  { files: ["**/*.js", "**/*.cjs"], rules: { "@typescript-eslint/no-require-imports": "off" } },
);
