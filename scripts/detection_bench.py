#!/usr/bin/env python3
"""Change detection per shell command at scale, end to end (docs/PERFORMANCE.md).

Generates repositories of 1,000, 30,000 and 100,000 tracked files (ten per directory, plus an
ignored `target/` of 2,000 files that must cost nothing) and runs, through each given keel
binary and the script provider, sessions of ten `true` Bash commands, of one, and of none (the
model only answers). Reports the wall time of each session (median of --runs) and the marginal
cost of a command at that size, (ten - one) / 9: what a command costs beyond start-up, which is
where the workspace's change detection lies (a `true` changes nothing, so the rest of the
ledger's work is constant). The session without commands is start-up and one model turn: a
first walk of the workspace made at start-up must not lengthen it.

Usage: scripts/detection_bench.py [--keel PATH ...] [--sizes 1000,30000,100000] [--runs 3]
Independent of keel's code: it only runs the binary and times it.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def make_repo(root, files, ignored=2000):
    os.makedirs(root)
    with open(os.path.join(root, ".gitignore"), "w") as f:
        f.write("target/\n*.log\n")
    for i in range(files):
        d = os.path.join(root, "src", f"mod{i // 50:04}", f"sub{i % 5}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"file{i}.rs"), "w") as f:
            f.write(f"pub fn f{i}() {{}}\n")
    for i in range(ignored):
        d = os.path.join(root, "target", "debug", "deps", f"d{i // 500}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"o{i}.o"), "w") as f:
            f.write("x")


def write_script(path, commands):
    turns = [{"tool_calls": [{"name": "Bash", "input": {"command": "true"}}]} for _ in range(commands)]
    turns.append({"text": "done"})
    with open(path, "w") as f:
        json.dump({"turns": turns}, f)


def session(keel, repo, script, home):
    env = {"PATH": os.environ.get("PATH", ""), "HOME": home, "KEEL_HOME": os.path.join(home, ".keel"),
           "LANG": "C.UTF-8", "KEEL_VERIFICATION_GATE": "off"}
    args = [keel, "-p", "run the commands", "--provider", "script", "--script", script,
            "--permission-mode", "bypassPermissions", "--output-format", "json"]
    start = time.perf_counter()
    out = subprocess.run(args, cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wall = time.perf_counter() - start
    if out.returncode != 0:
        sys.exit(f"{keel} failed ({out.returncode}): {out.stderr.decode(errors='replace')[-2000:]}")
    return wall


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keel", action="append", help="binary to measure (repeatable)")
    ap.add_argument("--sizes", default="1000,30000,100000")
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    keels = a.keel or [os.path.join(ROOT, "target", "release", "keel")]
    sizes = [int(s) for s in a.sizes.split(",")]
    work = tempfile.mkdtemp(prefix="keel-detection-bench-")
    try:
        ten, one, none = (os.path.join(work, f"{n}.json") for n in ("ten", "one", "none"))
        write_script(ten, 10)
        write_script(one, 1)
        write_script(none, 0)
        print(f"{'files':>8}  {'binary':<28} {'10 commands':>20} {'1 command':>10} {'none':>8} {'per command':>12}")
        for n in sizes:
            repo = os.path.join(work, f"repo-{n}")
            make_repo(repo, n)
            for keel in keels:
                t10, t1, t0 = [], [], []
                for r in range(a.runs):
                    home = tempfile.mkdtemp(prefix="home-", dir=work)
                    t10.append(session(keel, repo, ten, home))
                    t1.append(session(keel, repo, one, home))
                    t0.append(session(keel, repo, none, home))
                    shutil.rmtree(home)
                m10, m1, m0 = statistics.median(t10), statistics.median(t1), statistics.median(t0)
                spread = f"{min(t10):.2f}-{max(t10):.2f}"
                print(f"{n:>8}  {keel[-28:]:<28} {m10:>6.2f} s ({spread}) {m1:>8.2f} s {m0:>6.2f} s "
                      f"{(m10 - m1) / 9 * 1000:>9.1f} ms", flush=True)
            shutil.rmtree(repo)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
