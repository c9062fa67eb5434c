import fs from "node:fs";
import js from "@eslint/js";
import tseslint from "typescript-eslint";
import globals from "globals";

// Package boundaries (docs/decisions/0015-package-boundaries.md): a package is imported through its
// exports, never its src/; no service imports another service; the contract depends on nothing.
const { services } = JSON.parse(fs.readFileSync(new URL("./services.json", import.meta.url), "utf8"));
const packageName = (folder) =>
  JSON.parse(fs.readFileSync(new URL(`./${folder}/package.json`, import.meta.url), "utf8")).name;
const servicePackages = services.map((s) => ({ folder: s.folder, pkg: packageName(s.folder) }));
const NO_SRC = {
  group: ["@dpp/*/src", "@dpp/*/src/*"],
  message: "Import a workspace package through its exports (package.json), not its src/.",
};
const restrict = (patterns) => ["error", { patterns }];

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
    rules: {
      "no-restricted-imports": restrict([
        NO_SRC,
        {
          group: servicePackages.filter((o) => o.pkg !== pkg).map((o) => o.pkg),
          message: "A service does not import another service: call it over gRPC (its proto in @dpp/proto).",
        },
      ]),
    },
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
