#!/bin/bash
# The reference fix (Harbor's oracle agent runs it): average the two middle elements.
set -euo pipefail
cat > /app/stats.py <<'PY'
"""Small statistics helpers."""


def mean(values):
    """The arithmetic mean of a non-empty list of numbers."""
    return sum(values) / len(values)


def median(values):
    """The median of a non-empty list of numbers."""
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2 == 0:
        return (ordered[middle - 1] + ordered[middle]) / 2
    return ordered[middle]
PY
