#!/usr/bin/env bash
# The evidence ledger's cost per Bash call: the workspace fingerprint on a generated
# 10,000-file repository, and the gate's own work without it (see docs/PERFORMANCE.md).
# With --detection [SIZES]: the change detection of one shell command at 1k, 30k and 100k
# files, a walk of the whole tree against the watcher (scripts/detection_bench.py measures
# whole sessions through the binary).
# Usage: scripts/evidence_bench.sh [--detection [1000,30000,100000]]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo run --release --quiet --example evidence_bench -- "$@"
