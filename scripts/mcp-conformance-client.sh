#!/usr/bin/env bash
# The client under test for scripts/mcp-conformance.sh: keel, headless, with the scenario's server
# as its only MCP server and a scripted model that calls the scenario's tool. For the
# authorization scenarios it first signs in with `keel mcp login`, the browser being a curl that
# follows the authorization server's redirects back to keel's loopback listener (the suite's
# authorization server approves without a person); when keel says the server wants another
# sign-in (more scope), it signs in again, as a person would, at most twice.
set -euo pipefail
url="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
scenario="${MCP_CONFORMANCE_SCENARIO:-}"
case "$scenario" in
  tools_call)
    turns='[{"tool_calls": [{"name": "mcp__conformance__add_numbers", "input": {"a": 2, "b": 3}}]}, {"text": "done"}]' ;;
  sse-retry)
    turns='[{"tool_calls": [{"name": "mcp__conformance__test_reconnection", "input": {}}]}, {"text": "done"}]' ;;
  elicitation-sep1034-client-defaults)
    turns='[{"tool_calls": [{"name": "mcp__conformance__test_client_elicitation_defaults", "input": {}}]}, {"text": "done"}]' ;;
  auth/*)
    turns='[{"tool_calls": [{"name": "mcp__conformance__test-tool", "input": {}}]}, {"text": "done"}]' ;;
  *)
    turns='[{"text": "done"}]' ;;
esac
echo "{\"model\": \"script\", \"turns\": $turns}" > "$work/script.json"
# The server entry: the scenario's URL, and what the scenario's context says about the client
# (a pre-registered id and secret, the client-credentials grant). The client metadata URL is
# the one the suite's authorization server expects; keel uses it only where the server
# supports URL-based client ids.
entry="$(URL="$url" SCENARIO="$scenario" node -e '
  const ctx = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT || "{}");
  const oauth = {clientMetadataUrl: "https://conformance-test.local/client-metadata.json"};
  if (ctx.client_id) oauth.clientId = ctx.client_id;
  if (ctx.client_secret) oauth.clientSecret = ctx.client_secret;
  if (process.env.SCENARIO.startsWith("auth/client-credentials")) oauth.grant = "client_credentials";
  process.stdout.write(JSON.stringify({type: "http", url: process.env.URL, oauth}));
')"
export HOME="$work" KEEL_HOME="$work/home"
cat > "$work/browser" <<'SH'
#!/bin/sh
exec curl -s -L -o /dev/null "$1"
SH
chmod +x "$work/browser"
export BROWSER="$work/browser"
cd "$work"
"$KEEL_CONFORMANCE_BIN" mcp add-json -s user conformance "$entry" >/dev/null
login() {
  "$KEEL_CONFORMANCE_BIN" mcp login conformance --timeout 20
}
run() {
  status=0
  KEEL_MCP_ELICITATION=defaults "$KEEL_CONFORMANCE_BIN" -p "run the scenario" \
    --provider script --script "$work/script.json" --no-session-persistence \
    --allowedTools mcp__conformance < /dev/null 2> "$work/stderr" || status=$?
  cat "$work/stderr" >&2
  return $status
}
case "$scenario" in
  auth/client-credentials*) ;;
  auth/*) login || exit 1 ;;
esac
run
# A server that refused keel during the run (a 403 asking for more scope) shows in `keel mcp
# list` as asking for a new sign-in.
for _ in 1 2; do
  "$KEEL_CONFORMANCE_BIN" mcp list | grep -q 'keel mcp login conformance' || break
  login || exit 1
  run
done
