#!/usr/bin/env bash
# Installs what the workspace needs on a machine with only Node 20: pnpm (pinned,
# run through npm exec, no global install or corepack) and the locked
# dependencies. Skips the install when node_modules is current. Prints to stderr
# so that commands whose stdout is JSON (the admin CLI) stay clean.
#
#   bash tools/bootstrap.sh          dependencies only (npm start, the admin CLI)
#   bash tools/bootstrap.sh --test   also the Debian packages the tests need (npm test), through
#                                    apt-get, each only when it is missing:
#                                    - chromium, for the browser tests of /docs and /review (/usr/bin/chromium,
#                                      or CHROMIUM_PATH);
#                                    - python3-confluent-kafka, which brings librdkafka and its mock
#                                      cluster (tools/kafka-mock/mock_cluster.py) for the kit's
#                                      Kafka tests.
#                                    Where they cannot be installed here (no apt-get; not root and
#                                    no passwordless sudo) it stops at once, naming the command.
set -euo pipefail
cd "$(dirname "$0")/.."
PNPM_VERSION=10.34.9
test_packages=0
for arg in "$@"; do
  case "$arg" in
    --test) test_packages=1 ;;
    *)
      echo "bootstrap: unknown option $arg (known: --test)" >&2
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

[ "$test_packages" = 1 ] || exit 0

# The tests' Debian packages missing here, one a line (a file test and one python3 run of a few tens of ms).
missing_packages() {
  [ -x "${CHROMIUM_PATH:-/usr/bin/chromium}" ] || echo chromium
  /usr/bin/python3 tools/kafka-mock/mock_cluster.py --check >/dev/null 2>&1 || echo python3-confluent-kafka
}

# apt_install PACKAGE...: installs Debian packages with apt-get, as root or through passwordless sudo
# (the package lists are updated when the install fails without it); stops the script at once with the
# command to run where it cannot.
apt_install() {
  local sudo="" command="apt-get install -y $*"
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
      sudo="sudo -n"
    else
      sudo=none
    fi
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "bootstrap: the tests need Debian packages missing here ($*) and apt-get is not available: install them yourself (on Debian: \`sudo $command\`), then run npm test again." >&2
    exit 1
  fi
  if [ "$sudo" = none ]; then
    echo "bootstrap: the tests need Debian packages missing here ($*); installing them needs root: run \`sudo $command\`, then npm test again." >&2
    exit 1
  fi
  echo "bootstrap: the tests need Debian packages missing here ($*): $command..." >&2
  local apt="env DEBIAN_FRONTEND=noninteractive apt-get"
  if ! $sudo $apt install -y --no-install-recommends "$@" >&2; then
    if ! { $sudo $apt update >&2 && $sudo $apt install -y --no-install-recommends "$@" >&2; }; then
      echo "bootstrap: apt-get could not install $*: run \`sudo apt-get update && sudo $command\`, then npm test again." >&2
      exit 1
    fi
  fi
}

mapfile -t missing < <(missing_packages)
if [ "${#missing[@]}" -gt 0 ]; then
  apt_install "${missing[@]}"
  mapfile -t still < <(missing_packages)
  if [ "${#still[@]}" -gt 0 ]; then
    echo "bootstrap: ${still[*]} still missing after apt-get install (chromium: ${CHROMIUM_PATH:-/usr/bin/chromium}; python3-confluent-kafka: /usr/bin/python3 tools/kafka-mock/mock_cluster.py --check says why)." >&2
    exit 1
  fi
  echo "bootstrap: installed ${missing[*]}." >&2
fi
