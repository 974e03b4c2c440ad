#!/usr/bin/env bash
# The client under test for scripts/mcp-conformance.sh: keel, headless, with the scenario's server
# as its only MCP server and a scripted model that calls the scenario's tool.
set -euo pipefail
url="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
case "${MCP_CONFORMANCE_SCENARIO:-}" in
  tools_call)
    turns='[{"tool_calls": [{"name": "mcp__conformance__add_numbers", "input": {"a": 2, "b": 3}}]}, {"text": "done"}]' ;;
  sse-retry)
    turns='[{"tool_calls": [{"name": "mcp__conformance__test_reconnection", "input": {}}]}, {"text": "done"}]' ;;
  *)
    turns='[{"text": "done"}]' ;;
esac
echo "{\"model\": \"script\", \"turns\": $turns}" > "$work/script.json"
cd "$work"
KEEL_HOME="$work/home" "$KEEL_CONFORMANCE_BIN" -p "run the scenario" \
  --provider script --script "$work/script.json" --no-session-persistence \
  --strict-mcp-config --allowedTools mcp__conformance \
  --mcp-config "{\"mcpServers\": {\"conformance\": {\"type\": \"http\", \"url\": \"$url\"}}}" < /dev/null
