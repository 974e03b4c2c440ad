#!/usr/bin/env bash
# Context benchmark: input tokens per turn over a scripted session without compaction, with
# tier 1 only and with tiers 1-4; the compactor's own CPU per turn; an information check.
# Usage: scripts/context-bench.sh [--turns N]   (see docs/PERFORMANCE.md)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo run --release --quiet --example context_bench -- "$@"
