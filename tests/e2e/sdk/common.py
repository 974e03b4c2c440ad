"""Shared by the SDK test programs: options pointing the SDK at keel, and a report of every
message as one JSON line, which the Rust test reads back and checks."""

import dataclasses
import json
import os
import sys

from claude_agent_sdk import ClaudeAgentOptions


def options(**kw):
    """Options that run keel (the binary under test) in the test's work directory."""
    kw.setdefault("cli_path", os.environ["KEEL_BIN"])
    kw.setdefault("cwd", os.environ["KEEL_WORK"])
    return ClaudeAgentOptions(**kw)


def report(kind, **fields):
    print(json.dumps({"kind": kind, **fields}, default=str), flush=True)


def plain(value):
    if dataclasses.is_dataclass(value):
        return {k: plain(v) for k, v in dataclasses.asdict(value).items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def message(m):
    """Reports one SDK message: its class and its fields."""
    report("message", type=type(m).__name__, data=plain(m))


def log(*args):
    print(*args, file=sys.stderr, flush=True)
