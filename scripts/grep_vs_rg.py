#!/usr/bin/env python3
"""Grep tool vs ripgrep on a large tree.

Runs the same queries through keel's Grep tool (one scripted Grep call in a headless session,
release binary, script provider) and through `rg` itself, and reports median wall times and
their ratio. keel's time includes its whole process (start-up, engine, transcript), so the
ratio is conservative; the "search only" column subtracts keel's time for the same session
without the Grep call.

The tree is generated (deterministic, ~110 MB in 6,000 files, with a .gitignore'd directory
that both must skip) unless --tree names an existing directory.

Usage: scripts/grep_vs_rg.py [--runs N] [--tree DIR] [--keel PATH] [--rg PATH]
"""

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

WORDS = ("alpha beta gamma delta value input output result error handler compute parse render "
         "buffer stream token index config session request response client server cache").split()


def make_tree(root, files=6000, lines=300):
    rng = random.Random(7)
    for i in range(files):
        d = os.path.join(root, f"pkg{i % 60}", f"mod{(i // 60) % 10}")
        os.makedirs(d, exist_ok=True)
        ext = ".rs" if i % 3 else ".py"
        with open(os.path.join(d, f"file{i}{ext}"), "w") as f:
            for n in range(lines):
                a, b, c = rng.choice(WORDS), rng.choice(WORDS), rng.choice(WORDS)
                if n % 40 == 0:
                    f.write(f"pub fn {a}_handler_{n}(input: &str) -> Result<{b}, Error> {{\n")
                elif i % 997 == 0 and n == 150:
                    f.write("    // NEEDLE_RARE: the one thing to find\n")
                else:
                    f.write(f"    let {a}_{n} = {b}::{c}(input, {n}); // note {a} {c}\n")
    ignored = os.path.join(root, "target")
    os.makedirs(ignored, exist_ok=True)
    with open(os.path.join(ignored, "huge.rs"), "w") as f:
        f.write("// NEEDLE_RARE in an ignored file\n" * 100000)
    with open(os.path.join(root, ".gitignore"), "w") as f:
        f.write("target/\n")


# (label, Grep input, rg arguments)
QUERIES = [
    ("rare literal, files", {"pattern": "NEEDLE_RARE", "output_mode": "files_with_matches"},
     ["-l", "NEEDLE_RARE"]),
    ("regex, content -n", {"pattern": r"fn \w+_handler_2\d\d\(", "output_mode": "content", "head_limit": 0},
     ["-n", r"fn \w+_handler_2\d\d\("]),
    ("-i count, type rust", {"pattern": "RESULT<GAMMA", "-i": True, "output_mode": "count", "type": "rust"},
     ["-i", "-c", "-t", "rust", "RESULT<GAMMA"]),
    ("trait impls, content -n", {"pattern": r"impl(<[^>]*>)?\s+\w+\s+for\s", "output_mode": "content", "head_limit": 0},
     ["-n", r"impl(<[^>]*>)?\s+\w+\s+for\s"]),
]


def timed(args, cwd, env=None):
    start = time.perf_counter()
    proc = subprocess.run(args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wall = time.perf_counter() - start
    return wall, proc


def keel_run(keel, tree, script, home):
    env = {"PATH": os.environ.get("PATH", ""), "HOME": home, "KEEL_HOME": os.path.join(home, ".keel")}
    wall, proc = timed([keel, "-p", "search", "--provider", "script", "--script", script,
                        "--output-format", "json", "--no-session-persistence"], tree, env)
    if proc.returncode != 0:
        sys.exit(f"keel failed: {proc.stderr.decode()[:2000]}")
    return wall


def keel_structured(keel, tree, script, home):
    """The Grep call's structured result, to check keel found what rg found."""
    env = {"PATH": os.environ.get("PATH", ""), "HOME": home, "KEEL_HOME": os.path.join(home, ".keel")}
    _, proc = timed([keel, "-p", "search", "--provider", "script", "--script", script,
                     "--output-format", "stream-json", "--verbose", "--no-session-persistence"], tree, env)
    for line in proc.stdout.decode().splitlines():
        v = json.loads(line)
        if v.get("type") == "user" and isinstance(v.get("tool_use_result"), dict):
            return v["tool_use_result"]
    sys.exit("no Grep result in keel's output")


def rg_found(rg_args, stdout):
    """What rg reports in the unit keel's structured result uses."""
    lines = [l for l in stdout.decode(errors="replace").splitlines() if l]
    if "-c" in rg_args:
        return "numMatches", sum(int(l.rsplit(":", 1)[1]) for l in lines)
    if "-l" in rg_args:
        return "numFiles", len(lines)
    return "numLines", len(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--tree")
    ap.add_argument("--keel", default=os.path.join(ROOT, "target", "release", "keel"))
    ap.add_argument("--rg", default=shutil.which("rg") or "rg")
    args = ap.parse_args()
    if not os.path.exists(args.keel):
        sys.exit(f"{args.keel} not found: run `cargo build --release` first")
    if not shutil.which(args.rg):
        sys.exit("ripgrep (rg) not found: install it (e.g. apt-get install ripgrep)")
    work = tempfile.mkdtemp(prefix="keel-grep-bench-")
    tree = args.tree
    if not tree:
        tree = os.path.join(work, "tree")
        os.makedirs(tree)
        make_tree(tree)
    home = os.path.join(work, "home")
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(tree) for f in fs)
    print(f"tree: {tree} ({size / 1e6:.0f} MB); {args.runs} runs per tool, median wall time")

    def script(turns):
        path = os.path.join(work, f"script{len(os.listdir(work))}.json")
        with open(path, "w") as f:
            json.dump({"model": "bench", "turns": turns}, f)
        return path

    baseline_script = script([{"text": "nothing to search"}])
    keel_run(args.keel, tree, baseline_script, home)
    baseline = statistics.median(keel_run(args.keel, tree, baseline_script, home) for _ in range(args.runs))
    print(f"keel session without the Grep call: {baseline * 1000:.1f} ms")
    print("| query | rg | keel Grep (whole run) | ratio | keel search only | ratio |")
    print("|---|---|---|---|---|---|")
    worst = 0.0
    for label, grep_input, rg_args in QUERIES:
        s = script([{"tool_calls": [{"name": "Grep", "input": grep_input}]}, {"text": "done"}])
        # The same file set as Grep: hidden files searched, .gitignore honoured outside git too,
        # version-control directories skipped.
        vcs = [a for d in (".git", ".svn", ".hg", ".bzr", ".jj", ".sl") for a in ("-g", f"!{d}")]
        rg_cmd = [args.rg, "--no-config", "--hidden", "--no-require-git"] + vcs + rg_args + ["."]
        _, proc = timed(rg_cmd, tree)
        key, expected = rg_found(rg_args, proc.stdout)
        got = keel_structured(args.keel, tree, s, home).get(key)
        if got != expected:
            sys.exit(f"{label}: keel found {key}={got}, rg found {expected}")
        keel_times, rg_times = [], []
        for _ in range(args.runs):
            keel_times.append(keel_run(args.keel, tree, s, home))
            wall, proc = timed(rg_cmd, tree)
            if proc.returncode not in (0, 1):
                sys.exit(f"rg failed: {proc.stderr.decode()}")
            rg_times.append(wall)
        k, r = statistics.median(keel_times), statistics.median(rg_times)
        ratio, search_ratio = k / r, max(k - baseline, 0.0) / r
        worst = max(worst, ratio)
        print(f"| {label} ({expected} {key[3:].lower()}) | {r * 1000:.1f} ms | {k * 1000:.1f} ms | {ratio:.2f}x | "
              f"{(k - baseline) * 1000:.1f} ms | {search_ratio:.2f}x |")
    print(f"worst whole-run ratio: {worst:.2f}x (budget 1.30x)")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
