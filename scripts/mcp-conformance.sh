#!/usr/bin/env bash
# Runs the official MCP client conformance scenarios (initialize, tools_call, sse-retry) against keel.
# Needs npm; installs node@22 and @modelcontextprotocol/conformance into a cache directory
# outside the repository (KEEL_TEST_CACHE, default ~/.cache/keel-tests). Results go to
# target/mcp-conformance/. Usage: scripts/mcp-conformance.sh [path/to/keel]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
keel="${1:-$repo/target/debug/keel}"
cache="${KEEL_TEST_CACHE:-$HOME/.cache/keel-tests}/conformance"
if [ ! -x "$cache/node_modules/.bin/conformance" ] || [ ! -x "$cache/node_modules/.bin/node" ]; then
  mkdir -p "$cache"
  npm install --no-audit --no-fund --prefix "$cache" node@22 @modelcontextprotocol/conformance >&2
fi
export PATH="$cache/node_modules/.bin:$PATH"
export KEEL_CONFORMANCE_BIN="$keel"
out="$repo/target/mcp-conformance"
mkdir -p "$out"
status=0
for scenario in ${KEEL_CONFORMANCE_SCENARIOS:-initialize tools_call sse-retry}; do
  echo "== $scenario" >&2
  conformance client --command "$here/mcp-conformance-client.sh" --scenario "$scenario" -o "$out/$scenario" || status=1
done
exit $status
