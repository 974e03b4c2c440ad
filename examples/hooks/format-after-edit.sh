#!/usr/bin/env bash
# PostToolUse hook: formats a file right after the agent edits or writes it.
# Uses the project's formatter when one is installed and otherwise strips trailing
# whitespace. Reports what it did as additional context for the model.
set -euo pipefail
input=$(cat)
file=$(jq -r '.tool_input.file_path // empty' <<<"$input")
[ -n "$file" ] && [ -f "$file" ] || exit 0
case "$file" in
  *.rs) command -v rustfmt >/dev/null && rustfmt --edition 2021 "$file" 2>/dev/null && how=rustfmt ;;
  *.py) command -v black >/dev/null && black -q "$file" && how=black ;;
  *.go) command -v gofmt >/dev/null && gofmt -w "$file" && how=gofmt ;;
esac
if [ -z "${how:-}" ]; then
  # [[:blank:]] is spaces and tabs only, so a CRLF line ending survives.
  sed -i 's/[[:blank:]]*\(\r\{0,1\}\)$/\1/' "$file"
  how="trailing-whitespace cleanup"
fi
jq -n --arg f "$file" --arg how "$how" \
  '{hookSpecificOutput: {hookEventName: "PostToolUse", additionalContext: ("Formatted " + $f + " with " + $how + ".")}}'
