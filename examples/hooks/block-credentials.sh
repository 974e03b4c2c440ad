#!/usr/bin/env bash
# PreToolUse hook: keeps the agent away from credential files.
# Blocks Read/Edit/Write of secret-looking paths and shell commands that mention them.
# Exit 2 blocks the call; the message on stderr goes back to the model.
set -euo pipefail
input=$(cat)
tool=$(jq -r '.tool_name' <<<"$input")
case "$tool" in
  Read|Edit|Write|NotebookEdit) target=$(jq -r '.tool_input.file_path // .tool_input.notebook_path // ""' <<<"$input") ;;
  Bash) target=$(jq -r '.tool_input.command // ""' <<<"$input") ;;
  *) exit 0 ;;
esac
pattern='(^|[/[:space:]])(\.env(\.[A-Za-z0-9_-]+)?|id_(rsa|ed25519|ecdsa)|[^[:space:]]+\.(pem|key|p12|pfx)|\.npmrc|\.pypirc|\.netrc)([[:space:]]|$)|/\.ssh/|/\.aws/'
if grep -Eq "$pattern" <<<"$target"; then
  echo "Blocked by block-credentials.sh: '$target' looks like a credential file. Do not read or change secrets; ask the user if the task really needs them." >&2
  exit 2
fi
exit 0
