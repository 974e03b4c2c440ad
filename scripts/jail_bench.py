#!/usr/bin/env python3
"""What the read-only jail adds to an auto-approved shell command.

Two measurements, both against the release binary:

1. The helper alone: `bash -c true` started the way keel used to start it (`setsid bash`),
   through keel's helper without confinement (containment and output cap only), and through
   the helper in the read-only jail (Landlock rules, seccomp, capabilities dropped), with the
   credential list keel would pass for this machine's HOME and a scanned repository.
2. End to end: a scripted session of N `git status --short` calls in a small repository, in
   default mode (keel approves them as read-only: jailed) and with an allow rule for them
   (approved: not jailed). The per-call difference is the jail's cost as the model sees it.

Usage: scripts/jail_bench.py [path/to/keel] (default: target/release/keel)
"""

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
KEEL = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "target", "release", "keel"))


def timed(cmd, runs, **kw):
    """Median wall time and mean CPU time (user + system of the child processes), in ms."""
    samples = []
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw)
        samples.append((time.perf_counter() - t) * 1000)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)) * 1000 / runs
    return statistics.median(samples), cpu


def helper_alone(work, tmp, runs=300):
    home = os.path.expanduser("~")
    hidden = [p for p in (os.path.join(home, n) for n in (".ssh", ".aws", ".gnupg", ".netrc")) if os.path.exists(p)]
    hidden += [os.path.join(work, ".env")]
    jail = [KEEL, "__sandbox-exec", "--cap", str(64 << 20), "--kind", "jail", "--write", tmp]
    for h in hidden:
        jail += ["--hide", h]
    shell = ["bash", "-c", "true"]
    rows = [
        ("setsid bash (direct, before)", ["setsid"] + shell),
        ("helper, not confined", ["setsid", KEEL, "__sandbox-exec", "--cap", str(64 << 20), "--kind", "none", "--"] + shell),
        ("helper, read-only jail", ["setsid"] + jail + ["--"] + shell),
    ]
    # Interleave the variants so machine load hits them alike.
    wall = {name: [] for name, _ in rows}
    cpu = {name: [] for name, _ in rows}
    for _ in range(5):
        for name, cmd in rows:
            med, c = timed(cmd, runs // 5, cwd=work)
            wall[name].append(med)
            cpu[name].append(c)
    return [(name, statistics.median(wall[name]), statistics.median(cpu[name])) for name, _ in rows]


def session(work, home, calls, extra):
    script = {"model": "bench", "turns": [{"tool_calls": [{"name": "Bash", "input": {"command": "git status --short"}}] * calls}, {"text": "done"}]}
    path = os.path.join(home, "script.json")
    with open(path, "w") as f:
        json.dump(script, f)
    env = {"PATH": os.environ["PATH"], "HOME": home, "KEEL_HOME": os.path.join(home, ".keel"), "LANG": "C.UTF-8"}
    cmd = [KEEL, "-p", "go", "--provider", "script", "--script", path, "--no-session-persistence"] + extra
    t = time.perf_counter()
    out = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
    elapsed = (time.perf_counter() - t) * 1000
    if out.returncode != 0:
        sys.exit(f"keel failed: {out.stderr}")
    return elapsed


def main():
    if not os.path.exists(KEEL):
        sys.exit(f"no keel binary at {KEEL}: build it with `cargo build --release`")
    with tempfile.TemporaryDirectory() as d:
        work = os.path.join(d, "work")
        home = os.path.join(d, "home")
        tmp = os.path.join(d, "tmp")
        for p in (work, home, tmp):
            os.makedirs(p)
        for i in range(50):
            os.makedirs(os.path.join(work, f"pkg{i % 5}"), exist_ok=True)
            with open(os.path.join(work, f"pkg{i % 5}", f"f{i}.txt"), "w") as f:
                f.write("x\n" * 10)
        with open(os.path.join(work, ".env"), "w") as f:
            f.write("TOKEN=x\n")
        subprocess.run(["git", "init", "-q"], cwd=work, check=True)
        subprocess.run(["git", "add", "."], cwd=work, check=True)
        subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "init"], cwd=work, check=True)

        print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        print("Helper alone (per command, `bash -c true`): median wall ms, CPU ms (user + system)")
        rows = helper_alone(work, tmp)
        base_wall, base_cpu = rows[0][1], rows[0][2]
        for name, ms, cpu in rows:
            print(f"  {name:32} wall {ms:6.2f} (+{ms - base_wall:5.2f})   cpu {cpu:5.2f} (+{cpu - base_cpu:5.2f})")

        calls = 40
        print(f"\nEnd to end: {calls} x `git status --short` in one session (median of 5 sessions):")
        jailed, approved = [], []
        for _ in range(5):
            jailed.append(session(work, home, calls, []))
            approved.append(session(work, home, calls, ["--allowedTools", "Bash(git status:*)"]))
        j, a = statistics.median(jailed), statistics.median(approved)
        print(f"  approved by a rule (not jailed)  {a:8.1f} ms  {a / calls:6.2f} ms per call")
        print(f"  approved as read-only (jailed)   {j:8.1f} ms  {j / calls:6.2f} ms per call")
        print(f"  jail's cost per call             {(j - a) / calls:6.2f} ms")


if __name__ == "__main__":
    main()
