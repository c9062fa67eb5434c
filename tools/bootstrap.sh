#!/usr/bin/env bash
# Installs what the workspace needs on a machine with only Node 20: pnpm (pinned,
# run through npm exec, no global install or corepack) and the locked
# dependencies. Skips the install when node_modules is current. Prints to stderr
# so that commands whose stdout is JSON (the admin CLI) stay clean.
#
#   bash tools/bootstrap.sh             dependencies only (npm start, the admin CLI)
#   bash tools/bootstrap.sh --browser   also Chromium for the browser test of /docs
#                                       (npm test): Debian's `chromium` package through
#                                       apt-get when /usr/bin/chromium is missing
set -euo pipefail
cd "$(dirname "$0")/.."
PNPM_VERSION=10.34.9
browser=0
for arg in "$@"; do
  case "$arg" in
    --browser) browser=1 ;;
    *)
      echo "bootstrap: unknown option $arg (known: --browser)" >&2
      exit 2
      ;;
  esac
done

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

# Chromium for test-e2e/docs.browser.e2e.test.ts. When it cannot be installed here,
# say so and go on: that test then fails with the same instruction (it never skips).
if [ "$browser" = 1 ] && [ ! -x /usr/bin/chromium ]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "bootstrap: /usr/bin/chromium is missing and apt-get is not available; install Chromium yourself (the browser test will fail without it)." >&2
  else
    sudo=""
    if [ "$(id -u)" != 0 ]; then
      if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo="sudo -n"; fi
    fi
    if [ "$(id -u)" != 0 ] && [ -z "$sudo" ]; then
      echo "bootstrap: /usr/bin/chromium is missing; installing it needs root: run \`sudo apt-get install -y chromium\` (the browser test will fail without it)." >&2
    else
      echo "bootstrap: /usr/bin/chromium is missing; installing Debian's chromium package (apt-get install -y chromium)..." >&2
      if $sudo env DEBIAN_FRONTEND=noninteractive apt-get update >&2 &&
        $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium >&2; then
        echo "bootstrap: installed $(/usr/bin/chromium --version 2>/dev/null || echo chromium)." >&2
      else
        echo "bootstrap: apt-get could not install chromium (the browser test will fail without it)." >&2
      fi
    fi
  fi
fi
