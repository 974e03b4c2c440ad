#!/usr/bin/env bash
# Builds keel and runs it. With ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) set, this is a
# real session and any arguments go to keel. Without a key it runs the offline demo: the
# script provider drives the real engine and tools on a temporary copy of examples/demo-repo.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cargo build --release --quiet --manifest-path "$here/Cargo.toml"
keel="$here/target/release/keel"

if [ -n "${ANTHROPIC_API_KEY:-}${ANTHROPIC_AUTH_TOKEN:-}" ]; then
  exec "$keel" "$@"
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
work="$tmp/demo-repo"
cp -R "$here/examples/demo-repo" "$work"
echo "No API key set: running the offline demo on a copy of examples/demo-repo in $work" >&2
echo >&2
cd "$work"
# A private HOME too: the demo must not pick up your own settings, hooks or CLAUDE.md.
mkdir -p "$tmp/home"
HOME="$tmp/home" KEEL_HOME="$tmp/keel-home" "$keel" -p "test_order_total_with_discount fails. Find the bug, fix it and run the tests." \
  --provider script --script "$here/examples/demo/script.json" --verbose \
  --permission-mode acceptEdits --allowedTools "Bash(python3 -m unittest:*)"
