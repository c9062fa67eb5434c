#!/usr/bin/env bash
# Installs what the workspace needs on a machine with only Node 20: pnpm (pinned,
# run through npm exec, no global install or corepack) and the locked
# dependencies. Skips the install when node_modules is current. Prints to stderr
# so that commands whose stdout is JSON (the admin CLI) stay clean.
set -euo pipefail
cd "$(dirname "$0")/.."
PNPM_VERSION=10.34.9
stamp=node_modules/.modules.yaml
if [ ! -f "$stamp" ] || [ pnpm-lock.yaml -nt "$stamp" ] || [ package.json -nt "$stamp" ]; then
  echo "Installing dependencies with pnpm ${PNPM_VERSION}..." >&2
  if command -v pnpm >/dev/null 2>&1 && [ "$(pnpm --version 2>/dev/null)" = "$PNPM_VERSION" ]; then
    CI=true pnpm install --frozen-lockfile >&2
  else
    CI=true npm exec --yes --package="pnpm@${PNPM_VERSION}" -- pnpm install --frozen-lockfile >&2
  fi
  touch "$stamp"
fi
