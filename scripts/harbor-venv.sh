#!/usr/bin/env bash
# Installs the pinned Harbor (tests/e2e/harbor/requirements.txt) into the virtual environment
# the Harbor end-to-end tests use: $KEEL_TEST_CACHE/harbor-<version> or
# ~/.cache/keel-tests/harbor-<version>. Harbor needs Python 3.12 or newer: the first found of
# python3.13, python3.12, python3 on PATH, then ~/.pyenv/versions/*/bin/python3, is used. Does
# nothing when the environment is already there; says so and exits 0 when this machine has no
# such Python (the tests then skip, saying why; under KEEL_TESTS_REQUIRE_ALL=1, as .ci/run
# sets it, the script fails instead).
set -euo pipefail
cd "$(dirname "$0")/.."
req=$(tr -d '[:space:]' < tests/e2e/harbor/requirements.txt)
version=${req#harbor==}
dir="${KEEL_TEST_CACHE:-$HOME/.cache/keel-tests}/harbor-$version"
if [ -f "$dir/.keel-ready" ] && [ -x "$dir/bin/python" ]; then
    exit 0
fi
recent() {
    "$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' 2>/dev/null
}
python=
for candidate in python3.13 python3.12 python3 "$HOME"/.pyenv/versions/*/bin/python3; do
    if path=$(command -v "$candidate" 2>/dev/null) && recent "$path"; then
        python=$path
        break
    fi
done
if [ -z "$python" ]; then
    if [ "${KEEL_TESTS_REQUIRE_ALL:-}" = 1 ]; then
        echo "harbor-venv: no Python 3.12 or newer found, and KEEL_TESTS_REQUIRE_ALL=1 requires every test to run" >&2
        exit 1
    fi
    echo "harbor-venv: no Python 3.12 or newer found; the Harbor tests will be skipped"
    exit 0
fi
rm -rf "$dir"
"$python" -m venv "$dir"
"$dir/bin/python" -m pip install --quiet --disable-pip-version-check "$req"
echo "$version" > "$dir/.keel-ready"
echo "harbor-venv: installed $req into $dir (with $("$python" --version))"
