#!/usr/bin/env bash
# Installs the pinned TypeScript Agent SDK (tests/e2e/ts-sdk/package.json) into the folder the
# end-to-end tests use: $KEEL_TEST_CACHE or ~/.cache/keel-tests, under ts-agent-sdk-<hash of the
# pins>. Does nothing when it is already there; says so and exits 0 when this machine has no
# node or npm (the test then skips, saying why;
# under KEEL_TESTS_REQUIRE_ALL=1, as .ci/run sets it, the script fails instead).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    if [ "${KEEL_TESTS_REQUIRE_ALL:-}" = 1 ]; then
        echo "ts-sdk-install: no node/npm on PATH, and KEEL_TESTS_REQUIRE_ALL=1 requires every test to run" >&2
        exit 1
    fi
    echo "ts-sdk-install: no node/npm on PATH; the TypeScript Agent SDK test will be skipped"
    exit 0
fi
pins=tests/e2e/ts-sdk/package.json
hash=$(sha256sum "$pins" | cut -c1-12)
dir="${KEEL_TEST_CACHE:-$HOME/.cache/keel-tests}/ts-agent-sdk-$hash"
if [ -f "$dir/.keel-ready" ]; then
    exit 0
fi
mkdir -p "$dir"
cp "$pins" "$dir/package.json"
(cd "$dir" && npm install --omit=optional --no-audit --no-fund --silent)
touch "$dir/.keel-ready"
echo "ts-sdk-install: installed the pins of $pins into $dir"
