"""Runs one Harbor trial of a task with keel's agent in the local environment, through
Harbor's own trial runner, and prints one JSON report: the reward, the exception Harbor
recorded, the agent context, and the trajectory keel exported, validated by Harbor's models.

Arguments: task folder, trials folder, keel binary, model server URL, scratch root.
"""

import asyncio
import json
import sys
from pathlib import Path

from harbor.models.trajectories import Trajectory
from harbor.models.trial.config import AgentConfig, EnvironmentConfig, TaskConfig, TrialConfig
from harbor.trial.trial import Trial
from harbor.utils.trajectory_utils import load_model_usage_from_trajectory


async def main() -> None:
    task, trials, keel, url, scratch = sys.argv[1:6]
    config = TrialConfig(
        task=TaskConfig(path=Path(task)),
        trials_dir=Path(trials),
        agent=AgentConfig(
            import_path="keel_harbor:KeelAgent",
            model_name="anthropic/claude-sonnet-4-5",
            base_url=url,
            kwargs={"binary": keel},
            env={"ANTHROPIC_API_KEY": "test-key"},
        ),
        environment=EnvironmentConfig(
            import_path="keel_harbor.local_env:LocalEnvironment",
            kwargs={"scratch_root": scratch},
        ),
    )
    trial = await Trial.create(config)
    result = await trial.run()
    agent_dir = trial.paths.agent_dir
    trajectory_path = agent_dir / "trajectory.json"
    report = {
        "kind": "trial",
        "rewards": result.verifier_result.rewards if result.verifier_result else None,
        "exception": result.exception_info.model_dump(mode="json") if result.exception_info else None,
        "agent_result": result.agent_result.model_dump(mode="json") if result.agent_result else None,
        "agent_info": result.agent_info.model_dump(mode="json") if result.agent_info else None,
        "agent_logs": sorted(str(p.relative_to(agent_dir)) for p in agent_dir.rglob("*") if p.is_file()),
        "trial_dir": str(trial.paths.trial_dir),
    }
    if trajectory_path.is_file():
        # Harbor's own models: this raises on anything ATIF does not allow.
        trajectory = Trajectory.model_validate_json(trajectory_path.read_text())
        report["trajectory"] = trajectory.to_json_dict()
        usage = load_model_usage_from_trajectory(trajectory_path)
        report["model_usage"] = {k: v.model_dump(mode="json") for k, v in (usage or {}).items()}
    print(json.dumps(report))


asyncio.run(main())
