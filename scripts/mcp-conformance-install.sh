#!/usr/bin/env bash
# Installs the pinned MCP client conformance suite (@modelcontextprotocol/conformance, the
# version scripts/mcp-conformance.sh names) and node@22, which it needs, into
# $KEEL_TEST_CACHE or ~/.cache/keel-tests, under conformance-<version>. Does nothing when it is
# already there; says so and exits 0 when this machine has no npm (the conformance test then
# skips, saying why; under KEEL_TESTS_REQUIRE_ALL=1, as .ci/run sets it, this fails instead).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v npm >/dev/null; then
    if [ "${KEEL_TESTS_REQUIRE_ALL:-}" = 1 ]; then
        echo "mcp-conformance-install: no npm on PATH, and KEEL_TESTS_REQUIRE_ALL=1 requires every test to run" >&2
        exit 1
    fi
    echo "mcp-conformance-install: no npm on PATH; the conformance test will be skipped"
    exit 0
fi
version=$(sed -n 's/^version="\(.*\)"$/\1/p' scripts/mcp-conformance.sh)
dir="${KEEL_TEST_CACHE:-$HOME/.cache/keel-tests}/conformance-$version"
if [ -f "$dir/.keel-ready" ]; then
    exit 0
fi
mkdir -p "$dir"
npm install --no-audit --no-fund --silent --prefix "$dir" node@22 "@modelcontextprotocol/conformance@$version"
touch "$dir/.keel-ready"
echo "mcp-conformance-install: installed the conformance suite $version (and node@22) into $dir"
