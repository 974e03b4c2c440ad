"""keel as a Harbor installed agent: ``harbor run --agent-import-path keel_harbor:KeelAgent``.

Setup uploads a keel binary from this machine into the task's container and checks that it
runs there (``install.sh``). A run is ``keel -p --output-format json`` on the instruction in
the container's working directory, with keel's home (its transcripts, evidence ledger and run
logs) in Harbor's agent logs folder; afterwards ``keel export --format atif`` writes the
session there as ``trajectory.json``. A failed run is raised as the Harbor error class that its
exit status and result object name (``errors.py``).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import tempfile
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from harbor.agents.agent_auth_resolution import ModelConnectionSpec, ProviderAccess
from harbor.agents.capabilities import AgentCapabilities
from harbor.agents.installed.base import BaseInstalledAgent, with_prompt_template
from harbor.agents.options import InstalledAgentOptions
from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext
from harbor.models.model_api_format import ModelApiFormat

from keel_harbor.errors import classify, describe

INSTALL_SCRIPT = Path(__file__).with_name("install.sh")

# Inside the container.
_BINARY = "/usr/local/bin/keel"
_UPLOAD = "/installed-agent/keel"
_LOGS = "/logs/agent"
_HOME = f"{_LOGS}/keel-home"
_INSTRUCTION = f"{_LOGS}/instruction.md"
_RESULT = f"{_LOGS}/keel-result.json"
_STDERR = f"{_LOGS}/keel-stderr.log"
_TRAJECTORY = f"{_LOGS}/trajectory.json"

# Harbor's inference protocols → `keel --provider`.
_PROVIDERS = {
    ModelApiFormat.ANTHROPIC_MESSAGES: "anthropic",
    ModelApiFormat.OPENAI_CHAT_COMPLETIONS: "openai",
    ModelApiFormat.OPENAI_RESPONSES: "openai-responses",
}


class KeelOptions(InstalledAgentOptions):
    """Agent kwargs (``--ak``)."""

    binary: str | None = Field(
        default=None,
        description="keel binary on this machine to install in the container "
        "(default: $KEEL_BINARY, else `keel` on PATH). It must run in the task's image.",
    )
    permission_mode: Literal["bypassPermissions", "acceptEdits", "dontAsk"] = Field(
        default="bypassPermissions",
        description="keel's permission mode. Nobody answers questions in a container, so a mode "
        "that would ask denies instead; bypassPermissions lets the task's commands run.",
    )
    max_turns: int | None = Field(default=None, ge=1, description="keel --max-turns.")
    verification_gate: Literal["nudge", "require", "off"] | None = Field(
        default=None,
        description="keel's stop gate (KEEL_VERIFICATION_GATE); default: keel's own (nudge).",
    )


class KeelAgent(BaseInstalledAgent):
    """keel in a Harbor task container."""

    capabilities = AgentCapabilities(base_url=True, atif=True)
    options_model = KeelOptions
    options: KeelOptions
    MODEL_CONNECTION = ModelConnectionSpec(
        default_provider="anthropic",
        agent_provider_access=ProviderAccess(
            api_key_candidate_names=["ANTHROPIC_API_KEY"],
            base_url_candidate_names=["ANTHROPIC_BASE_URL"],
        ),
        api_key_destination_names={
            ModelApiFormat.ANTHROPIC_MESSAGES: "ANTHROPIC_API_KEY",
            ModelApiFormat.OPENAI_CHAT_COMPLETIONS: "OPENAI_API_KEY",
            ModelApiFormat.OPENAI_RESPONSES: "OPENAI_API_KEY",
        },
        base_url_destination_names={
            ModelApiFormat.ANTHROPIC_MESSAGES: "ANTHROPIC_BASE_URL",
            ModelApiFormat.OPENAI_CHAT_COMPLETIONS: "OPENAI_BASE_URL",
            ModelApiFormat.OPENAI_RESPONSES: "OPENAI_BASE_URL",
        },
        supported_api_formats=list(_PROVIDERS),
        default_api_format_by_provider={
            "anthropic": ModelApiFormat.ANTHROPIC_MESSAGES,
            "default": ModelApiFormat.OPENAI_CHAT_COMPLETIONS,
        },
    )

    @staticmethod
    def name() -> str:
        return "keel"

    def get_version_command(self) -> str | None:
        return f"{_BINARY} --version"

    def parse_version(self, stdout: str) -> str:
        return stdout.strip().removeprefix("keel").strip()

    def _binary(self) -> Path:
        named = self.options.binary or os.environ.get("KEEL_BINARY") or shutil.which("keel")
        if not named:
            raise FileNotFoundError("no keel binary to install: pass --ak binary=PATH or set KEEL_BINARY")
        path = Path(named).expanduser()
        if not path.is_file():
            raise FileNotFoundError(f"the keel binary {path} does not exist")
        return path

    async def _in_container(self, environment: BaseEnvironment, command: str, **kw: Any):
        """One command in the container; its result as it is (failures are judged here)."""
        return await environment.exec(command=command, **kw)

    async def install(self, environment: BaseEnvironment) -> None:
        await environment.upload_file(self._binary(), _UPLOAD)
        await environment.upload_file(INSTALL_SCRIPT, "/installed-agent/install-keel.sh")
        result = await self._in_container(
            environment, f"sh /installed-agent/install-keel.sh {_UPLOAD} {_BINARY}", user="root"
        )
        if result.return_code != 0:
            raise RuntimeError(f"installing keel failed: {result.stderr or result.stdout}")

    def _command(self) -> str:
        access = self.model_connection
        provider = _PROVIDERS.get(access.model_api_format or ModelApiFormat.ANTHROPIC_MESSAGES)
        if provider is None:
            raise ValueError(f"keel does not speak the {access.model_api_format} protocol")
        flags = ["-p", "--output-format", "json", "--permission-mode", self.options.permission_mode]
        flags += ["--provider", provider]
        model = access.model_id or self._parsed_model_name
        if model:
            flags += ["--model", model]
        if self.options.max_turns is not None:
            flags += ["--max-turns", str(self.options.max_turns)]
        return (
            f"mkdir -p {_HOME} && {_BINARY} {shlex.join(flags)} "
            f"< {_INSTRUCTION} > {_RESULT} 2> {_STDERR}"
        )

    def _keel_env(self) -> dict[str, str]:
        env = {**self.model_connection.env, "KEEL_HOME": _HOME}
        if self.options.verification_gate is not None:
            env["KEEL_VERIFICATION_GATE"] = self.options.verification_gate
        return env

    @with_prompt_template
    async def run(self, instruction: str, environment: BaseEnvironment, context: AgentContext) -> None:
        with tempfile.TemporaryDirectory(prefix="keel-harbor-") as tmp:
            prompt = Path(tmp) / "instruction.md"
            prompt.write_text(instruction)
            await environment.upload_file(prompt, _INSTRUCTION)
        env = self._keel_env()
        run = await self._in_container(environment, self._command(), env=env)
        shown = await self._in_container(environment, f"cat {_RESULT}")
        result = _last_json_object(shown.stdout or "")
        if isinstance(result, dict) and isinstance(result.get("session_id"), str):
            await self._export(environment, result["session_id"], env)
        _fill_context(context, run.return_code, result)
        failure = classify(run.return_code, result)
        if failure is not None:
            tail = await self._in_container(environment, f"tail -c 4000 {_STDERR}")
            raise failure(describe(run.return_code, result, tail.stdout or ""))

    async def _export(self, environment: BaseEnvironment, session_id: str, env: dict[str, str]) -> None:
        """The session as ATIF beside the logs; a failed export is logged, never the run's fault."""
        quoted = shlex.quote(session_id)
        command = (
            f"{_BINARY} export --format atif {quoted} > {_TRAJECTORY}.tmp 2>> {_STDERR} "
            f"&& mv {_TRAJECTORY}.tmp {_TRAJECTORY}"
        )
        done = await self._in_container(environment, command, env=env)
        if done.return_code != 0:
            self.logger.warning("keel export of session %s failed (exit %s)", session_id, done.return_code)

    def populate_context_post_run(self, context: AgentContext) -> None:
        # `run` fills the context from keel's result object; the trajectory backs up the rest.
        return None


def _last_json_object(text: str) -> Any:
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                return None
    return None


def _fill_context(context: AgentContext, exit_code: int, result: Any) -> None:
    """Tokens, cost and keel's verification report, from the result object."""
    meta: dict[str, Any] = {"keel_exit_code": exit_code}
    if isinstance(result, dict):
        usage = result.get("usage") or {}
        cache_read = int(usage.get("cache_read_input_tokens") or 0)
        context.n_input_tokens = (
            int(usage.get("input_tokens") or 0) + int(usage.get("cache_creation_input_tokens") or 0) + cache_read
        )
        context.n_cache_tokens = cache_read
        context.n_output_tokens = int(usage.get("output_tokens") or 0)
        cost = result.get("total_cost_usd")
        context.cost_usd = float(cost) if isinstance(cost, (int, float)) else None
        for key in ("session_id", "subtype", "terminal_reason", "num_turns", "api_error_kind", "verification"):
            if key in result:
                meta[f"keel_{key}" if key != "verification" else "verification"] = result[key]
    context.metadata = meta
