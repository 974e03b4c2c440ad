#!/usr/bin/env python3
"""MCP start-up benchmark: what three stdio MCP servers add to keel's start-up.

Each server is the test server (tests/e2e/support/mcp_server.py) with a simulated start-up cost
(--start-delay). Measured, as the median of N runs of a one-turn headless session (script
provider, no network):

  base      keel -p with no MCP server
  one       one server (its own start time: process start, delay, handshake, tools/list)
  three     three such servers
  direct    one server started and initialised directly by this script, without keel
  direct3   three servers started at once and initialised directly by this script

keel starts servers in parallel, so `three - base` should be close to `direct3` (the servers'
own start time when they start together and share the CPU), not three times `direct`.

Usage: scripts/bench_mcp.py [--runs N] [--delay SECONDS] [--keel PATH]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVER = os.path.join(ROOT, "tests", "e2e", "support", "mcp_server.py")


def run_keel(keel, work, servers, delay):
    config = {"mcpServers": {
        f"s{i}": {"command": sys.executable, "args": [SERVER, "--start-delay", str(delay)]} for i in range(servers)
    }}
    script = os.path.join(work, "script.json")
    with open(script, "w") as f:
        json.dump({"model": "script", "turns": [{"text": "done"}]}, f)
    env = dict(os.environ, KEEL_HOME=os.path.join(work, "home"))
    args = [keel, "-p", "go", "--provider", "script", "--script", script, "--no-session-persistence",
            "--strict-mcp-config"]
    if servers:
        args += ["--mcp-config", json.dumps(config)]
    start = time.perf_counter()
    out = subprocess.run(args, cwd=work, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if out.returncode != 0 or "warning" in out.stderr:
        sys.exit(f"keel failed: {out.stderr}")
    return elapsed


def direct(delay, servers=1):
    """Starts servers at once and completes initialize + tools/list with each, as a client would."""
    start = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, SERVER, "--start-delay", str(delay)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
             for _ in range(servers)]
    msgs = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "b", "version": "1"}}},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]
    for msg in msgs:
        for p in procs:
            p.stdin.write(json.dumps(msg) + "\n")
            p.stdin.flush()
        for p in procs:
            p.stdout.readline()
    elapsed = time.perf_counter() - start
    for p in procs:
        p.kill()
        p.wait()
    return elapsed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--delay", type=float, default=0.3)
    ap.add_argument("--keel", default=os.path.join(ROOT, "target", "debug", "keel"))
    a = ap.parse_args()
    results = {}
    with tempfile.TemporaryDirectory() as work:
        for name, n in [("base", 0), ("one", 1), ("three", 3)]:
            results[name] = statistics.median(run_keel(a.keel, work, n, a.delay) for _ in range(a.runs))
    results["direct"] = statistics.median(direct(a.delay) for _ in range(a.runs))
    results["direct3"] = statistics.median(direct(a.delay, 3) for _ in range(a.runs))
    ms = {k: round(v * 1000) for k, v in results.items()}
    print(f"median of {a.runs} runs, server start-up delay {a.delay * 1000:.0f} ms")
    for k in ["base", "one", "three", "direct", "direct3"]:
        print(f"  {k:7} {ms[k]:6d} ms")
    print(f"  one server adds    {ms['one'] - ms['base']:6d} ms (its own start: {ms['direct']} ms)")
    print(f"  three servers add  {ms['three'] - ms['base']:6d} ms (their own start, all at once: {ms['direct3']} ms;"
          f" one after another: ~{3 * ms['direct']} ms)")


if __name__ == "__main__":
    main()
