#!/bin/bash
# Grades the task: the hidden tests run against /app/stats.py; reward 1 when all pass.
mkdir -p /logs/verifier
if cd /app && PYTHONPATH=/app python3 -m unittest discover -s /tests -t /tests -p 'test_*.py' -v; then
    echo 1 > /logs/verifier/reward.txt
else
    echo 0 > /logs/verifier/reward.txt
fi
