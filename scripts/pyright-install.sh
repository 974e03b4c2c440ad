#!/usr/bin/env bash
# Installs the pinned pyright (tests/e2e/lsp/pyright-version.txt) from npm into the folder the
# language-server end-to-end test uses: $KEEL_TEST_CACHE or ~/.cache/keel-tests, under
# pyright-<version> (its `pyright-langserver` in node_modules/.bin). Does nothing when it is
# already there; says so and exits 0 when this machine has no node or npm (the test then skips,
# saying why; under KEEL_TESTS_REQUIRE_ALL=1, as .ci/run sets it, the script fails instead).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    if [ "${KEEL_TESTS_REQUIRE_ALL:-}" = 1 ]; then
        echo "pyright-install: no node/npm on PATH, and KEEL_TESTS_REQUIRE_ALL=1 requires every test to run" >&2
        exit 1
    fi
    echo "pyright-install: no node/npm on PATH; the pyright test will be skipped"
    exit 0
fi
version=$(tr -d '[:space:]' < tests/e2e/lsp/pyright-version.txt)
dir="${KEEL_TEST_CACHE:-$HOME/.cache/keel-tests}/pyright-$version"
if [ -f "$dir/.keel-ready" ]; then
    exit 0
fi
mkdir -p "$dir"
npm install --no-audit --no-fund --silent --prefix "$dir" "pyright@$version"
touch "$dir/.keel-ready"
echo "pyright-install: installed pyright $version into $dir"
