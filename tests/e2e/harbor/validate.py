"""Validates the ATIF document on stdin with Harbor's models and prints what Harbor reads
from it: the step count, the embedded sub-agents and the per-model usage."""

import json
import sys

from harbor.models.trajectories import Trajectory
from harbor.utils.trajectory_utils import compute_model_usage

trajectory = Trajectory.model_validate_json(sys.stdin.read())
print(json.dumps({
    "kind": "valid",
    "steps": len(trajectory.steps),
    "subagents": [s.trajectory_id for s in trajectory.subagent_trajectories or []],
    "model_usage": {k: v.model_dump(mode="json") for k, v in compute_model_usage(trajectory).items()},
}))
