#!/usr/bin/env bash
# Installs the pinned @modelcontextprotocol/server-everything (tests/e2e/mcp/everything-version.txt)
# into the folder the MCP end-to-end test uses: $KEEL_TEST_CACHE or ~/.cache/keel-tests, under
# everything-<version>. Does nothing when it is already there; says so and exits 0 when this
# machine has no node or npm (the test then skips, saying why;
# under KEEL_TESTS_REQUIRE_ALL=1, as .ci/run sets it, the script fails instead).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    if [ "${KEEL_TESTS_REQUIRE_ALL:-}" = 1 ]; then
        echo "mcp-everything-install: no node/npm on PATH, and KEEL_TESTS_REQUIRE_ALL=1 requires every test to run" >&2
        exit 1
    fi
    echo "mcp-everything-install: no node/npm on PATH; the server-everything test will be skipped"
    exit 0
fi
version=$(tr -d '[:space:]' < tests/e2e/mcp/everything-version.txt)
dir="${KEEL_TEST_CACHE:-$HOME/.cache/keel-tests}/everything-$version"
if [ -f "$dir/.keel-ready" ]; then
    exit 0
fi
mkdir -p "$dir"
npm install --no-audit --no-fund --silent --prefix "$dir" "@modelcontextprotocol/server-everything@$version"
touch "$dir/.keel-ready"
echo "mcp-everything-install: installed server-everything $version into $dir"
