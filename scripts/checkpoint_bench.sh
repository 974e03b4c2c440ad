#!/usr/bin/env bash
# What shell undo costs per Bash call: the stash kept before a command on a generated
# 9,000-file repository, first and later, and logging a command's changes (docs/PERFORMANCE.md).
# Usage: scripts/checkpoint_bench.sh [--release]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo run --quiet "$@" --example checkpoint_bench
