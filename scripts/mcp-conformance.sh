#!/usr/bin/env bash
# Runs the official MCP client conformance suite against keel (all its client scenarios, or
# those named in KEEL_CONFORMANCE_SCENARIOS) and prints how many passed.
# Needs npm; installs node@22 and @modelcontextprotocol/conformance (pinned below) into a cache
# directory outside the repository (KEEL_TEST_CACHE, default ~/.cache/keel-tests) with
# scripts/mcp-conformance-install.sh when they are not there yet. Results go to
# target/mcp-conformance/ (or KEEL_CONFORMANCE_OUT). Usage: scripts/mcp-conformance.sh [path/to/keel]
# Exits 0 when every scenario passed, or with KEEL_CONFORMANCE_MIN=N when at least N did (CI
# uses the target of 24 of the 26 client scenarios).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
keel="${1:-$repo/target/debug/keel}"
version="0.1.16"
cache="${KEEL_TEST_CACHE:-$HOME/.cache/keel-tests}/conformance-$version"
if [ ! -f "$cache/.keel-ready" ]; then
  "$here/mcp-conformance-install.sh" >&2
fi
export PATH="$cache/node_modules/.bin:$PATH"
export KEEL_CONFORMANCE_BIN="$keel"
out="${KEEL_CONFORMANCE_OUT:-$repo/target/mcp-conformance}"
rm -rf "$out"
mkdir -p "$out"
scenarios="${KEEL_CONFORMANCE_SCENARIOS:-$(conformance list 2>/dev/null | sed -n '/Client scenarios/,$p' | sed -n 's/^  - \([^ ]*\).*/\1/p')}"
passed=0
failed=0
failures=""
for scenario in $scenarios; do
  echo "== $scenario" >&2
  if conformance client --command "$here/mcp-conformance-client.sh" --scenario "$scenario" -o "$out/$scenario" >&2; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    failures="$failures $scenario"
  fi
done
echo "MCP client conformance $version:$([ -n "$failures" ] && echo " failed:$failures")"
echo "$passed passed, $failed failed"
if [ -n "${KEEL_CONFORMANCE_MIN:-}" ]; then
  [ "$passed" -ge "$KEEL_CONFORMANCE_MIN" ]
else
  [ "$failed" -eq 0 ]
fi
