#!/usr/bin/env bash
# The evidence ledger's cost per Bash call: the workspace fingerprint on a generated
# 10,000-file repository, and the gate's own work without it (see docs/PERFORMANCE.md).
# Usage: scripts/evidence_bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo run --release --quiet --example evidence_bench
