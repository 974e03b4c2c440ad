#!/usr/bin/env bash
# Installs the pinned Python Agent SDK (tests/e2e/sdk/requirements.txt) into the virtual
# environment the end-to-end tests use: $KEEL_TEST_CACHE or ~/.cache/keel-tests. Does nothing
# when it is already there; says so and exits 0 when this machine has no python3 (the tests
# then skip, saying why;
# under KEEL_TESTS_REQUIRE_ALL=1, as .ci/run sets it, the script fails instead).
set -euo pipefail
cd "$(dirname "$0")/.."
req=$(tr -d '[:space:]' < tests/e2e/sdk/requirements.txt)
version=${req#claude-agent-sdk==}
dir="${KEEL_TEST_CACHE:-$HOME/.cache/keel-tests}/claude-agent-sdk-$version"
if ! command -v python3 >/dev/null; then
    if [ "${KEEL_TESTS_REQUIRE_ALL:-}" = 1 ]; then
        echo "sdk-venv: no python3 on PATH, and KEEL_TESTS_REQUIRE_ALL=1 requires every test to run" >&2
        exit 1
    fi
    echo "sdk-venv: no python3 on PATH; the Agent SDK tests will be skipped"
    exit 0
fi
if [ -f "$dir/.keel-ready" ] && [ -x "$dir/bin/python" ]; then
    exit 0
fi
python3 -m venv "$dir"
"$dir/bin/python" -m pip install --quiet --disable-pip-version-check "$req"
echo "$version" > "$dir/.keel-ready"
echo "sdk-venv: installed $req into $dir"
