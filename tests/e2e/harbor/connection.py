"""Prints, one JSON line per case on stdin (KeelAgent constructor kwargs), the keel command
line and the environment keel_harbor's agent would run keel with."""

import json
import shlex
import sys
import tempfile
from pathlib import Path

from keel_harbor import KeelAgent

for line in sys.stdin:
    if not line.strip():
        continue
    kwargs = json.loads(line)
    with tempfile.TemporaryDirectory() as logs:
        agent = KeelAgent(logs_dir=Path(logs), **kwargs)
        command = agent._command()
        keel = shlex.split(command.split("&&", 1)[1].split("<", 1)[0])
        print(json.dumps({"kind": "connection", "argv": keel, "env": agent._keel_env()}))
