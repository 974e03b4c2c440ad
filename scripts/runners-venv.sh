#!/usr/bin/env bash
# Installs the pinned test runners (tests/e2e/runners/requirements.txt: pytest, tox) into the
# virtual environment the evidence end-to-end tests put on PATH:
# $KEEL_TEST_CACHE/runners-<versions> or ~/.cache/keel-tests/runners-<versions>. Does nothing
# when it is already there; says so and exits 0 when this machine has no python3 (the tests
# that need pytest then skip, saying why;
# under KEEL_TESTS_REQUIRE_ALL=1, as .ci/run sets it, the script fails instead).
set -euo pipefail
cd "$(dirname "$0")/.."
req=tests/e2e/runners/requirements.txt
# `pytest==9.2.0` and `tox==4.32.0` → `pytest-9.2.0-tox-4.32.0`, as the tests compute it.
name=$(grep -v '^[[:space:]]*$' "$req" | sed 's/==/-/' | paste -sd- -)
dir="${KEEL_TEST_CACHE:-$HOME/.cache/keel-tests}/runners-$name"
if ! command -v python3 >/dev/null; then
    if [ "${KEEL_TESTS_REQUIRE_ALL:-}" = 1 ]; then
        echo "runners-venv: no python3 on PATH, and KEEL_TESTS_REQUIRE_ALL=1 requires every test to run" >&2
        exit 1
    fi
    echo "runners-venv: no python3 on PATH; the tests that run pytest will be skipped"
    exit 0
fi
if [ -f "$dir/.keel-ready" ] && [ -x "$dir/bin/pytest" ]; then
    exit 0
fi
python3 -m venv "$dir"
"$dir/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req"
echo "$name" > "$dir/.keel-ready"
echo "runners-venv: installed $(paste -sd' ' "$req") into $dir"
