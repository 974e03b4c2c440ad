"""Reads keel runs (`{"exit_code", "result"}` objects, one per line on stdin) and prints, one
JSON line each, the Harbor error class keel_harbor.errors.classify gives, or null, and the
retry and grading policy Harbor attaches to that class."""

import json
import sys

from harbor.models.trial.error_policy import policy_for
from keel_harbor.errors import classify

for line in sys.stdin:
    if not line.strip():
        continue
    run = json.loads(line)
    cls = classify(run["exit_code"], run["result"])
    name = cls.__name__ if cls is not None else None
    policy = policy_for(name) if name else None
    print(json.dumps({
        "kind": "class",
        "name": name,
        "should_retry": policy.should_retry if policy else None,
        "should_grade": policy.should_grade if policy else None,
    }))
