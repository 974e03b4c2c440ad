#!/usr/bin/env python3
"""keel end-to-end benchmark.

Runs a scripted session of ~90 model turns (Glob/Grep/Read, Edit/Write and Bash over a generated
repo of 40 files, a fresh copy per run) through the release binary and reports wall time, CPU
time (user+sys) and peak RSS of the keel process, per run and per turn. CPU time includes the
processes keel starts for Bash calls; their cost, measured by starting the same processes
directly, is subtracted for "keel's own CPU". Transports:

  script     the script provider: engine, tools and transcript, no network
  sse        a loopback HTTP server speaking the Anthropic SSE protocol: adds the HTTP client,
             SSE framing and stream assembly
  openai     the same server speaking OpenAI Chat Completions (--provider openai)
  responses  the same server speaking the OpenAI Responses API (--provider openai-responses)

Over HTTP the server also samples keel's own CPU time (utime + stime from /proc, without its
children) at every request, so the cost per turn can be shown for the first and the last
hundred turns of a long session (--turns 1000): it must not grow with the history.

With --git the generated repository is a git repository with one commit, as real projects are
(keel then asks git for committed contents when files are edited).

--startup times `keel -p "say hi"` (script provider, one answer, no tools) from start to exit in
a small git repository and in one of 100,000 committed files (generated once, in 1,000
directories; --startup-repo keeps it for later runs), median of --runs runs each.

--per-tool N runs, for each kind of call, a session of N such calls and one of none (script
provider), and prints what one call costs in wall time and in CPU, and the wall time that is no
CPU of keel or of what it started (waiting: disk syncs, sleeps, a process's start). --no-fsync
runs keel with fsync and fdatasync made no-ops (a preloaded shim built with `cc`), to measure
what the durability syncs cost; never a way to run keel for real.

Usage: scripts/bench.py [--runs N] [--turns N] [--keel PATH] [--mode script|sse|openai|responses|both|all]
                        [--git] [--reads N] [--startup [--startup-files N] [--startup-repo DIR]]
Independent of keel's code: it only runs the binary and reads rusage and /proc from the kernel.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

WRAP = []
# With --request-times FILE: the CLOCK_MONOTONIC time of every request and keel's own CPU
# seconds then, to line up a profile recorded with `perf record -k CLOCK_MONOTONIC` with the
# session's turns, or to see the cost per turn along the whole session.
REQUEST_TIMES = None
REQUEST_TIMES_FILE = None
FIXED = {}
# Per mode: the autocompaction summary requests of the last run (answered, not scripted).
SUMMARIES = {}
WINDOW = [100]
# What marks autocompaction's summary request (`compact::autocompact::summary::INSTRUCTION_LEAD`),
# and the note the scripted server answers it with.
SUMMARY_LEAD = b"[keel: compaction] The conversation above has to be condensed"
SUMMARY_TURN = {"text": "## Decisions\nKeep surveying.\n\n## Open verification items\nNone.\n\n"
                        "## Current work\nThe survey of the repository.\n\n## Next step\nGo on with the next file."}
# Whether language servers run (`--lsp`): off by default, their CPU is theirs, not keel's.
LSP = [False]
# Added to keel's environment (--no-fsync's preloaded shim).
ENV_EXTRA = {}
# Whether the SSE mode works out the prompt-cache figures (`--no-cache-model` turns it off).
CACHE_MODEL = [True]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def make_repo(root, files=40, lines=150):
    for i in range(files):
        sub = os.path.join(root, "src", f"mod{i % 5}")
        os.makedirs(sub, exist_ok=True)
        with open(os.path.join(sub, f"file{i}.rs"), "w") as f:
            for n in range(lines):
                if n % 25 == 0:
                    f.write(f"pub fn handler_{i}_{n}(input: &str) -> Result<u32, Error> {{\n")
                elif n % 25 == 24:
                    f.write("}\n")
                else:
                    f.write(f"    let value_{n} = compute(input, {n}); // TODO check {i}\n")
    with open(os.path.join(root, "README.md"), "w") as f:
        f.write("# generated\n")
    with open(os.path.join(root, ".gitignore"), "w") as f:
        f.write("target/\n")


def git_init(root):
    env = dict(os.environ, GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="bench@example.com",
               GIT_COMMITTER_NAME="bench", GIT_COMMITTER_EMAIL="bench@example.com")
    for cmd in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "init"]):
        subprocess.run(cmd, cwd=root, env=env, check=True)


def make_big_repo(root, files):
    """`files` small Rust files in directories of 100, committed."""
    for i in range(files):
        sub = os.path.join(root, "src", f"d{i // 10000}", f"m{i // 100}")
        if i % 100 == 0:
            os.makedirs(sub, exist_ok=True)
        with open(os.path.join(sub, f"f{i % 100}.rs"), "w") as f:
            f.write(f"pub fn f{i}() -> u32 {{ {i} }}\n")
    git_init(root)


def startup(keel, runs, files, keep):
    """Wall time of `keel -p "say hi"` in a small and in a large repository (median of `runs`)."""
    work = tempfile.mkdtemp(prefix="keel-bench-startup-")
    small = os.path.join(work, "small")
    os.makedirs(small)
    make_repo(small)
    git_init(small)
    big = keep or os.path.join(work, "big")
    if not os.path.exists(os.path.join(big, ".git")):
        os.makedirs(big, exist_ok=True)
        began = time.perf_counter()
        make_big_repo(big, files)
        print(f"generated {files} committed files in {time.perf_counter() - began:.1f} s ({big})")
    script = os.path.join(work, "script.json")
    with open(script, "w") as f:
        json.dump({"turns": [{"text": "hi"}]}, f)
    home = os.path.join(work, "home")
    env = {"PATH": os.environ.get("PATH", ""), "HOME": home, "KEEL_HOME": os.path.join(home, ".keel")}
    args = WRAP + [keel, "-p", "say hi", "--provider", "script", "--script", script]

    def once(repo):
        start = time.perf_counter()
        done = subprocess.run(args, cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        wall = time.perf_counter() - start
        if done.returncode != 0 or b"hi" not in done.stdout:
            sys.exit(f"keel failed ({done.returncode}): {done.stderr.decode()[:2000]}")
        return wall

    print(f"start-up: `keel -p \"say hi\"` with the script provider, median of {runs} runs (first run not counted)")
    print("| repository | wall (median) | min | max |")
    print("|---|---|---|---|")
    for name, repo in (("small (42 files, git)", small), (f"large ({files} files, git)", big)):
        once(repo)  # warms the page cache and keel's home
        walls = [once(repo) for _ in range(runs)]
        print(f"| {name} | {statistics.median(walls) * 1000:.0f} ms | {min(walls) * 1000:.0f} ms | "
              f"{max(walls) * 1000:.0f} ms |")
    shutil.rmtree(work, ignore_errors=True)


def make_turns(root, turns):
    """Cycles of ten turns: survey (Glob, Grep, Read), edit (Edit, a second Edit without re-reading,
    Write of a new file) and shell (Bash). Each cycle works on its own file, so every edit's anchor
    is unique and every edit succeeds. The searches look in `src/`, whose size stays the same: the
    notes the Writes add (one per cycle, 500 in a 5,000-turn session) would otherwise make every
    Grep search a tree that grows 13-fold, which is the tool's work and not keel's per-turn cost
    (docs/PERFORMANCE.md, long sessions)."""
    out = []
    for t in range(turns - 1):
        k, c = t % 10, t // 10
        f = c % 40
        path = f"src/mod{f % 5}/file{f}.rs"
        if k == 0:
            call = {"name": "Glob", "input": {"pattern": "src/**/*.rs"}}
        elif k == 1:
            call = {"name": "Grep", "input": {"pattern": f"handler_{f}_", "path": "src", "output_mode": "content"}}
        elif k == 2:
            call = {"name": "Read", "input": {"file_path": path}}
        elif k == 3:
            call = {"name": "Edit", "input": edit(path, f, c, 0)}
        elif k == 4:
            call = {"name": "Grep", "input": {"pattern": "TODO check 1", "path": "src", "output_mode": "files_with_matches"}}
        elif k == 5:
            g = (f + 20) % 40
            call = {"name": "Read", "input": {"file_path": f"src/mod{g % 5}/file{g}.rs", "offset": 20, "limit": 40}}
        elif k == 6:
            call = {"name": "Write", "input": {"file_path": f"notes/cycle{c}.md",
                                               "content": "".join(f"- step {n}\n" for n in range(20))}}
        elif k == 7:
            call = {"name": "Bash", "input": {"command": f"grep -c TODO {path}", "description": "count TODOs"}}
        elif k == 8:
            call = {"name": "Edit", "input": edit(path, f, c, 25)}
        else:
            call = {"name": "Grep", "input": {"pattern": "Result<u32", "path": "src", "output_mode": "count"}}
        out.append({"text": f"Step {t + 1}.", "tool_calls": [call]})
    out.append({"text": "Finished the survey."})
    return out


def per_tool_turns(kind, n):
    """`n` calls of one kind, each its own turn (Edit: one Read first, then `n` edits of distinct
    lines of that file, which keel lets follow its own writes without a re-read)."""
    path = "src/mod0/file0.rs"
    if kind == "Edit":
        calls = [{"name": "Read", "input": {"file_path": path}}]
        calls += [{"name": "Edit", "input": {"file_path": path, "old_string": f"let value_{i + 1} = compute(input, {i + 1});",
                                             "new_string": f"let value_{i + 1} = compute_checked(input, {i + 1});"}}
                  for i in range(n)]
    elif kind == "Glob":
        calls = [{"name": "Glob", "input": {"pattern": "src/**/*.rs"}}] * n
    elif kind == "Grep":
        calls = [{"name": "Grep", "input": {"pattern": "handler_3_", "path": "src", "output_mode": "content"}}] * n
    elif kind == "Read":
        calls = [{"name": "Read", "input": {"file_path": f"src/mod{i % 5}/file{i % 40}.rs"}} for i in range(n)]
    elif kind == "Write":
        calls = [{"name": "Write", "input": {"file_path": f"notes/n{i}.md", "content": "- a note\n" * 20}}
                 for i in range(n)]
    elif kind == "Bash":
        calls = [{"name": "Bash", "input": {"command": "true", "description": "nothing"}}] * n
    else:
        calls = []
    out = [{"text": f"Call {i + 1}.", "tool_calls": [c]} for i, c in enumerate(calls)]
    out.append({"text": "Done."})
    return out


PER_TOOL_KINDS = ["none", "Read", "Glob", "Grep", "Edit", "Write", "Bash"]
# Edit's lines: `let value_N` exists for N not a multiple of 25 minus 0 or 24 (see make_repo).
EDIT_LINES = [n for n in range(1, 150) if n % 25 not in (0, 24)]


def per_tool(keel, runs, n, work):
    """What one call of each kind costs: (session of n calls - session of none) / n."""
    repo = os.path.join(work, "repo")
    base = {}
    rows = []
    for kind in PER_TOOL_KINDS:
        turns = per_tool_turns(kind, min(n, len(EDIT_LINES)) if kind == "Edit" else n)
        if kind == "Edit":
            # Distinct, existing lines only.
            for t, line in zip(turns[1:-1], EDIT_LINES):
                c = t["tool_calls"][0]["input"]
                c["old_string"] = f"let value_{line} = compute(input, {line});"
                c["new_string"] = f"let value_{line} = compute_checked(input, {line});"
        script_path = os.path.join(work, f"per-tool-{kind}.json")
        with open(script_path, "w") as f:
            json.dump({"model": "claude-sonnet-4-5", "turns": turns}, f)
        walls, cpus = [], []
        for _ in range(runs):
            w, c, _, _, _, _ = measure(keel, repo, "script", turns, script_path)
            walls.append(w)
            cpus.append(c)
        wall, cpu = statistics.median(walls), statistics.median(cpus)
        if kind == "none":
            base = {"wall": wall, "cpu": cpu}
            rows.append(f"| no call (start, one answer, exit) | – | {wall * 1000:.1f} ms | {cpu * 1000:.1f} ms | "
                        f"{(wall - cpu) * 1000:.1f} ms |")
            continue
        # Edit's session also holds its one Read, counted in with the edits.
        calls = sum(1 for t in turns for c in t.get("tool_calls", []) if c["name"] == kind)
        dw, dc = (wall - base["wall"]) / calls, (cpu - base["cpu"]) / calls
        rows.append(f"| {kind} | {calls} | {dw * 1000:.2f} ms | {dc * 1000:.2f} ms | {(dw - dc) * 1000:.2f} ms |")
    print("| call (script provider) | calls | wall per call | CPU per call (keel and what it starts) | "
          "wall that is not CPU, per call |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(r)


def no_fsync_shim(work):
    """A preloaded library whose fsync and fdatasync do nothing, to measure what syncs cost."""
    src = os.path.join(work, "nosync.c")
    lib = os.path.join(work, "nosync.so")
    with open(src, "w") as f:
        f.write("int fsync(int fd){(void)fd;return 0;}\nint fdatasync(int fd){(void)fd;return 0;}\n")
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        sys.exit("--no-fsync needs a C compiler (cc) to build its shim")
    subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", lib, src], check=True)
    return lib


def make_read_turns(turns):
    """The read-only session of the issue's memory figures: `turns` Read calls over the 40 files,
    then an answer. It isolates what a session holds per turn from what edits and shells add."""
    out = [{"text": f"Reading {t + 1}.", "tool_calls": [{"name": "Read", "input": {
        "file_path": f"src/mod{(t % 40) % 5}/file{t % 40}.rs"}}]} for t in range(turns)]
    out.append({"text": "Read them all."})
    return out


def edit(path, f, c, line):
    """An edit whose anchor is unique and still there: the first round over the 40 files renames a
    handler, later rounds (long sessions) change a different value line each time."""
    r = c // 40
    if r == 0:
        return {"file_path": path, "old_string": f"pub fn handler_{f}_{line}(",
                "new_string": f"pub fn handler_{f}_{line}_checked("}
    n = line + r
    return {"file_path": path, "old_string": f"let value_{n} = compute(input, {n});",
            "new_string": f"let value_{n} = compute_checked(input, {n});"}


def shell_commands(turns):
    return [c["input"]["command"] for t in turns for c in t.get("tool_calls", []) if c["name"] == "Bash"]


def shell_cpu(repo, commands):
    """CPU time of the processes keel starts for the session's Bash calls (`setsid`, `bash` and
    the command), started here the same way, to tell keel's own CPU apart from theirs."""
    import resource
    setsid = shutil.which("setsid")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for cmd in commands:
        argv = ["bash", "-c", 'eval "$1"; pwd -P >/dev/null', "bash", cmd]
        subprocess.run(([setsid] if setsid else []) + argv, cwd=repo, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def sse_for(turn, n):
    def ev(name, data):
        return f"event: {name}\ndata: {json.dumps(data)}\n\n"

    blocks = []
    if turn.get("text"):
        blocks.append(("text", turn["text"]))
    for i, c in enumerate(turn.get("tool_calls", [])):
        blocks.append(("tool", (f"toolu_{n}_{i}", c["name"], c["input"])))
    parts = [ev("message_start", {"type": "message_start", "message": {
        "id": f"msg_{n}", "type": "message", "role": "assistant", "content": [], "model": "claude-sonnet-4-5",
        "stop_reason": None, "usage": {"input_tokens": 1000, "output_tokens": 1}}})]
    for idx, (kind, val) in enumerate(blocks):
        if kind == "text":
            parts.append(ev("content_block_start", {"type": "content_block_start", "index": idx,
                                                    "content_block": {"type": "text", "text": ""}}))
            for w in val.split(" "):
                parts.append(ev("content_block_delta", {"type": "content_block_delta", "index": idx,
                                                        "delta": {"type": "text_delta", "text": w + " "}}))
        else:
            tid, name, inp = val
            parts.append(ev("content_block_start", {"type": "content_block_start", "index": idx,
                                                    "content_block": {"type": "tool_use", "id": tid, "name": name, "input": {}}}))
            js = json.dumps(inp)
            for k in range(0, len(js), 8):
                parts.append(ev("content_block_delta", {"type": "content_block_delta", "index": idx,
                                                        "delta": {"type": "input_json_delta", "partial_json": js[k:k + 8]}}))
        parts.append(ev("content_block_stop", {"type": "content_block_stop", "index": idx}))
    stop = "tool_use" if turn.get("tool_calls") else "end_turn"
    parts.append(ev("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 50}}))
    parts.append(ev("message_stop", {"type": "message_stop"}))
    return "".join(parts).encode()


def words(text):
    return [w + " " for w in text.split(" ")]


def chat_for(turn, n):
    def chunk(delta, finish=None):
        return "data: " + json.dumps({"id": f"chatcmpl-{n}", "object": "chat.completion.chunk", "model": "gpt-4.1",
                                      "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}) + "\n\n"
    parts = [chunk({"role": "assistant", "content": ""})]
    for w in words(turn.get("text", "")) if turn.get("text") else []:
        parts.append(chunk({"content": w}))
    for i, c in enumerate(turn.get("tool_calls", [])):
        parts.append(chunk({"tool_calls": [{"index": i, "id": f"call_{n}_{i}", "type": "function",
                                            "function": {"name": c["name"], "arguments": ""}}]}))
        js = json.dumps(c["input"])
        for k in range(0, len(js), 8):
            parts.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": js[k:k + 8]}}]}))
    parts.append(chunk({}, "tool_calls" if turn.get("tool_calls") else "stop"))
    parts.append("data: " + json.dumps({"id": f"chatcmpl-{n}", "object": "chat.completion.chunk", "model": "gpt-4.1",
                                        "choices": [], "usage": {"prompt_tokens": 1000, "completion_tokens": 50}}) + "\n\n")
    parts.append("data: [DONE]\n\n")
    return "".join(parts).encode()


def responses_for(turn, n):
    seq = [0]

    def ev(kind, data):
        data = dict(data, type=kind, sequence_number=seq[0])
        seq[0] += 1
        return f"event: {kind}\ndata: {json.dumps(data)}\n\n"
    parts = [ev("response.created", {"response": {"id": f"resp_{n}", "status": "in_progress", "model": "gpt-4.1"}})]
    idx = 0
    if turn.get("text"):
        parts.append(ev("response.output_item.added", {"output_index": idx, "item": {"id": f"msg_{n}", "type": "message", "role": "assistant", "content": []}}))
        for w in words(turn["text"]):
            parts.append(ev("response.output_text.delta", {"output_index": idx, "item_id": f"msg_{n}", "content_index": 0, "delta": w}))
        parts.append(ev("response.output_item.done", {"output_index": idx, "item": {"id": f"msg_{n}", "type": "message", "role": "assistant",
                                                                                      "content": [{"type": "output_text", "text": turn["text"]}]}}))
        idx += 1
    for i, c in enumerate(turn.get("tool_calls", [])):
        js = json.dumps(c["input"])
        item = {"id": f"fc_{n}_{i}", "type": "function_call", "call_id": f"call_{n}_{i}", "name": c["name"], "arguments": ""}
        parts.append(ev("response.output_item.added", {"output_index": idx, "item": item}))
        for k in range(0, len(js), 8):
            parts.append(ev("response.function_call_arguments.delta", {"output_index": idx, "item_id": item["id"], "delta": js[k:k + 8]}))
        parts.append(ev("response.output_item.done", {"output_index": idx, "item": dict(item, arguments=js, status="completed")}))
        idx += 1
    parts.append(ev("response.completed", {"response": {"id": f"resp_{n}", "status": "completed", "model": "gpt-4.1",
                                                           "usage": {"input_tokens": 1000, "output_tokens": 50}}}))
    return "".join(parts).encode()


class CacheModel:
    """What an Anthropic-style prompt cache makes of the session's requests, worked out from the
    request bodies alone (independent of keel's code). The request is read as a sequence of
    blocks (tool definitions, system blocks, then each message's content blocks); a block
    carrying `cache_control` is a breakpoint. A request reads from the cache the longest prefix
    that ends at one of its breakpoints, or at most 20 blocks before one, and that an earlier
    request wrote; it writes everything from there up to its last breakpoint; the rest is
    uncached input. Tokens are estimated as 4 bytes of the block's JSON each. Cost is counted in
    uncached-token equivalents: input 1, cache read 0.1, cache write 1.25."""

    LOOKBACK = 20

    def __init__(self):
        import hashlib
        self.hashlib = hashlib
        self.written = set()
        self.sent = self.read = self.write = self.uncached = 0
        self.requests = 0
        # Per request: (tokens sent, read from the cache, written to it), for --cache-trace.
        self.trace = []

    @staticmethod
    def blocks(body):
        out = []
        for t in body.get("tools", []):
            out.append(t)
        system = body.get("system", [])
        if isinstance(system, str):
            system = [{"type": "text", "text": system}]
        out.extend(system)
        for m in body.get("messages", []):
            content = m.get("content")
            if isinstance(content, str):
                content = [{"type": "text", "text": content}]
            for i, b in enumerate(content):
                out.append(dict(b, _role=m.get("role"), _first=i == 0))
        return out

    def add(self, raw):
        try:
            body = json.loads(raw)
        except ValueError:
            return
        h = self.hashlib.sha256()
        prefix_hash, tokens, marks, total = [], [], [], 0
        for i, b in enumerate(self.blocks(body)):
            marked = isinstance(b, dict) and "cache_control" in b
            clean = {k: v for k, v in b.items() if k != "cache_control"} if isinstance(b, dict) else b
            enc = json.dumps(clean, sort_keys=True, separators=(",", ":")).encode()
            h.update(enc)
            h.update(b"\0")
            prefix_hash.append(h.hexdigest())
            total += len(enc) / 4
            tokens.append(total)
            if marked:
                marks.append(i)
        hit = -1
        for p in reversed(marks):
            for j in range(p, max(p - self.LOOKBACK, -1), -1):
                if prefix_hash[j] in self.written:
                    hit = j
                    break
            if hit >= 0:
                break
        read = tokens[hit] if hit >= 0 else 0
        last = marks[-1] if marks else -1
        written = max((tokens[last] if last >= 0 else 0) - read, 0)
        self.sent += total
        self.read += read
        self.write += written
        self.trace.append((total, read, written))
        self.uncached += total - read - written
        for p in marks:
            self.written.add(prefix_hash[p])
        self.requests += 1

    def cost(self):
        return self.uncached + 0.1 * self.read + 1.25 * self.write


def fixed_prefix_bytes(protocol, raw):
    """Bytes of what every request repeats before the conversation: tool definitions and system
    text (as JSON), per protocol."""
    try:
        body = json.loads(raw)
    except ValueError:
        return None
    if "messages" not in body and "input" not in body:
        return None  # not a model request (a local server's capability probe)
    size = len(json.dumps(body.get("tools", []), separators=(",", ":")))
    if protocol == "sse":
        return size + len(json.dumps(body.get("system", []), separators=(",", ":")))
    items = body.get("messages") if protocol == "openai" else body.get("input", [])
    size += len(json.dumps(body.get("instructions", ""), separators=(",", ":"))) if protocol == "responses" else 0
    return size + sum(len(json.dumps(m, separators=(",", ":"))) for m in items or []
                      if isinstance(m, dict) and m.get("role") in ("system", "developer"))


PROTOCOLS = {"sse": sse_for, "openai": chat_for, "responses": responses_for}


def self_cpu(pid):
    """utime + stime of one process (not its children), in seconds."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def peak_rss_mib(pid):
    """VmHWM (peak resident set) of one process, in MiB."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except (OSError, ValueError, IndexError):
        pass
    return None


class Server:
    def __init__(self, turns, protocol="sse", piece=None):
        self.bodies = [PROTOCOLS[protocol](t, n) for n, t in enumerate(turns)]
        self.piece = piece
        self.next = 0
        self.summaries = 0
        self.pid = None
        self.samples = []
        self.hwm = None
        self.lock = threading.Lock()
        # Request bodies are kept in a file and worked out after the run, so that the cache model
        # does not hold up the answers (or keep a long session's bodies in memory).
        self.cache = CacheModel() if protocol == "sse" and CACHE_MODEL[0] else None
        self.spool = tempfile.TemporaryFile() if self.cache else None
        self.protocol = protocol
        self.fixed = None
        outer = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *a):
                pass

            def do_POST(self):
                length = int(self.headers.get("content-length", 0))
                raw = self.rfile.read(length)
                with outer.lock:
                    if outer.fixed is None:
                        outer.fixed = fixed_prefix_bytes(outer.protocol, raw)
                    if outer.spool is not None:
                        outer.spool.write(len(raw).to_bytes(8, "little") + raw)
                    if SUMMARY_LEAD in raw:
                        # Autocompaction's summary request (long sessions reach the window): it
                        # gets a hand-off note and does not use up a scripted turn.
                        outer.summaries += 1
                        body = PROTOCOLS[outer.protocol](SUMMARY_TURN, outer.next)
                    else:
                        body = outer.bodies[outer.next]
                        outer.next += 1
                    if outer.pid:
                        outer.samples.append(self_cpu(outer.pid))
                        outer.hwm = peak_rss_mib(outer.pid)
                    if REQUEST_TIMES is not None:
                        REQUEST_TIMES.append((time.clock_gettime(time.CLOCK_MONOTONIC),
                                              outer.samples[-1] if outer.pid else None))
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                step = outer.piece or len(body) or 1
                for k in range(0, len(body), step):
                    # A real server streams: the client sees the body in many small reads.
                    self.wfile.write(body[k:k + step])
                    self.wfile.flush()
                    if outer.piece:
                        time.sleep(0.0005)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self):
        self.httpd.shutdown()
        if self.spool is not None:
            self.spool.seek(0)
            while len(head := self.spool.read(8)) == 8:
                self.cache.add(self.spool.read(int.from_bytes(head, "little")))
            self.spool.close()


def run_once(keel, template, mode, turns, script_path, piece=None):
    home = tempfile.mkdtemp(prefix="keel-bench-home-")
    repo = os.path.join(home, "repo")
    shutil.copytree(template, repo)
    # The evidence ledger still watches every call; only its stop-gate reminder (one extra model
    # turn when the scripted session ends without a test run) is off, so every mode runs the
    # same turns.
    env = {"PATH": os.environ.get("PATH", ""), "HOME": home, "KEEL_HOME": os.path.join(home, ".keel"),
           "KEEL_VERIFICATION_GATE": "off", **ENV_EXTRA}
    args = WRAP + [keel, "-p", "survey the repository", "--output-format", "json",
                   "--permission-mode", "acceptEdits", "--allowedTools", "Bash"]
    if not LSP[0]:
        # A language server on PATH (rust-analyzer for the repository's .rs files) would be
        # started at the first edit, and its CPU, reaped with keel, counted as keel's own.
        args += ["--settings", '{"languageServers": {"enabled": false}}']
    server = None
    if mode == "script":
        args += ["--provider", "script", "--script", script_path]
    else:
        server = Server(turns, mode, piece)
        if mode == "sse":
            env.update({"ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "bench"})
        else:
            provider = "openai" if mode == "openai" else "openai-responses"
            # The same window as the Anthropic model, so compaction treats every transport alike.
            env.update({"OPENAI_BASE_URL": server.url + "/v1", "OPENAI_API_KEY": "bench",
                        "KEEL_CONTEXT_WINDOW": "200000"})
            args += ["--provider", provider, "--model", "gpt-4.1"]
    start = time.perf_counter()
    proc = subprocess.Popen(args, cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if server:
        server.pid = proc.pid
    peak = [None]

    def watch():
        # keel's own peak RSS, read while it runs (VmHWM disappears with the process).
        while proc.poll() is None:
            peak[0] = peak_rss_mib(proc.pid) or peak[0]
            time.sleep(0.02)
    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    out, err = proc.communicate()
    # Before joining the watcher, whose sleep between samples would add up to 20 ms.
    wall = time.perf_counter() - start
    watcher.join()
    if server:
        server.close()
    if proc.returncode != 0:
        sys.exit(f"keel failed ({proc.returncode}): {err.decode()[:2000]}")
    result = json.loads(out)
    try:
        check_edits(repo, turns)
    except SystemExit as e:
        sys.exit(f"{e} (the run ended {result.get('subtype')} after {result.get('num_turns')} turns: "
                 f"{str(result.get('result'))[:300]}; stderr: {err.decode()[-1500:]})")
    shutil.rmtree(home, ignore_errors=True)
    result["cpu_samples"] = server.samples if server else []
    result["summaries"] = server.summaries if server else 0
    result["cache"] = server.cache if server else None
    result["fixed"] = server.fixed if server else None
    result["peak_rss"] = max(v for v in (peak[0], server.hwm if server else None, 0.0) if v is not None) or None
    return wall, result


def check_edits(repo, turns):
    """The scripted edits must really have happened (a refused edit would be cheaper)."""
    for t in turns:
        for c in t.get("tool_calls", []):
            if c["name"] == "Edit":
                with open(os.path.join(repo, c["input"]["file_path"])) as f:
                    if c["input"]["new_string"] not in f.read():
                        sys.exit(f"edit not applied: {c['input']}")
            elif c["name"] == "Write" and not os.path.exists(os.path.join(repo, c["input"]["file_path"])):
                sys.exit(f"write not applied: {c['input']['file_path']}")


def measure(keel, repo, mode, turns, script_path, piece=None):
    import resource
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall, result = run_once(keel, repo, mode, turns, script_path, piece)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    # keel's own VmHWM, read while it ran (ru_maxrss of RUSAGE_CHILDREN would also count what a
    # forked child inherits from this script before it execs keel).
    rss = result["peak_rss"] or after.ru_maxrss / 1024.0
    if result["fixed"]:
        FIXED[mode] = result["fixed"]
    if result["summaries"]:
        SUMMARIES[mode] = result["summaries"]
    return wall, cpu, rss, result["num_turns"], window_costs(result["cpu_samples"]), result["cache"]


def window_costs(samples, width=None):
    """keel's own CPU per turn over the first and the last `width` turns (ms), from the samples
    taken at each request; None when the session is too short or /proc was unreadable."""
    width = width or WINDOW[0]
    if len(samples) < 2 * width + 1 or any(s is None for s in samples):
        return None
    first = (samples[width] - samples[0]) / width
    last = (samples[-1] - samples[-1 - width]) / width
    return first * 1000, last * 1000


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--turns", type=int, default=90)
    ap.add_argument("--keel", default=os.path.join(ROOT, "target", "release", "keel"))
    ap.add_argument("--mode", default="both", choices=["script", "sse", "openai", "responses", "both", "all"])
    ap.add_argument("--wrap", default="", help="command prefix for keel, e.g. a profiler")
    ap.add_argument("--git", action="store_true",
                    help="make the repository a git repository with one commit, as real projects are")
    ap.add_argument("--startup", action="store_true",
                    help="time `keel -p` start to exit in a small and in a large git repository instead")
    ap.add_argument("--startup-files", type=int, default=100_000, help="files of the large repository")
    ap.add_argument("--startup-repo", default=None,
                    help="where the large repository is generated (kept, and reused when it exists)")
    ap.add_argument("--cache-trace", action="store_true",
                    help="also print what each request of the SSE mode sends, reads from and writes to the cache")
    ap.add_argument("--reads", type=int, default=0,
                    help="instead of the mixed session, a session of N Read turns (the memory figures use 80)")
    ap.add_argument("--lsp", action="store_true",
                    help="let keel start the language servers it finds (their CPU then counts as keel's)")
    ap.add_argument("--request-times", default=None,
                    help="write the monotonic time of every request and keel's own CPU seconds then to this file")
    ap.add_argument("--no-cache-model", action="store_true",
                    help="skip the prompt-cache figures (for sessions of thousands of turns, whose "
                         "request bodies take the script far longer to work out than keel to send)")
    ap.add_argument("--giant", action="store_true",
                    help="also time one answer made of a single 10 MB text event, streamed in 16 KB writes "
                         "(SSE parsing must be linear)")
    ap.add_argument("--giant-piece", type=int, default=16 * 1024, help="write size of the giant event's body")
    ap.add_argument("--per-tool", type=int, default=0, metavar="N",
                    help="instead of the mixed session, sessions of N calls of each kind (and of none): what one "
                         "call costs in wall time and in CPU")
    ap.add_argument("--no-fsync", action="store_true",
                    help="run keel with fsync and fdatasync made no-ops, to measure what the syncs cost")
    args = ap.parse_args()
    WRAP.extend(args.wrap.split())
    LSP[0] = args.lsp
    if args.request_times:
        global REQUEST_TIMES, REQUEST_TIMES_FILE
        REQUEST_TIMES = []
        REQUEST_TIMES_FILE = args.request_times
    CACHE_MODEL[0] = not args.no_cache_model
    WINDOW[0] = 200 if args.turns >= 1000 else 100
    if not os.path.exists(args.keel):
        sys.exit(f"{args.keel} not found: run `cargo build --release` first")
    if args.startup:
        startup(args.keel, args.runs, args.startup_files, args.startup_repo)
        return
    work = tempfile.mkdtemp(prefix="keel-bench-")
    repo = os.path.join(work, "repo")
    os.makedirs(repo)
    make_repo(repo)
    if args.git:
        git_init(repo)
    if args.no_fsync:
        ENV_EXTRA["LD_PRELOAD"] = no_fsync_shim(work)
        print("fsync and fdatasync are no-ops in this run (--no-fsync)")
    if args.per_tool:
        print(f"keel per call: sessions of {args.per_tool} calls of one kind, median of {args.runs} runs, "
              f"40-file repo{' (git)' if args.git else ''}")
        per_tool(args.keel, args.runs, args.per_tool, work)
        shutil.rmtree(work, ignore_errors=True)
        return
    turns = make_read_turns(args.reads) if args.reads else make_turns(repo, args.turns)
    script_path = os.path.join(work, "script.json")
    with open(script_path, "w") as f:
        json.dump({"model": "claude-sonnet-4-5", "turns": turns}, f)
    modes = {"both": ["script", "sse"], "all": ["script", "sse", "openai", "responses"]}.get(args.mode, [args.mode])
    shells = statistics.median(shell_cpu(repo, shell_commands(turns)) for _ in range(args.runs))
    caches = {}
    counts = {}
    for t in turns:
        for c in t.get("tool_calls", []):
            counts[c["name"]] = counts.get(c["name"], 0) + 1
    print(f"keel benchmark: {len(turns)} model turns, 40-file repo{' (git, one commit)' if args.git else ''}, "
          f"{args.runs} runs per mode")
    print("tool calls: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
    print(f"CPU of the processes the Bash calls start (setsid, bash, command), run directly: {shells * 1000:.0f} ms")
    print("| mode | turns | wall (median) | CPU (median) | wall / CPU | CPU per turn | keel's own CPU per turn "
          f"| peak RSS (max) | own CPU per turn, first / last {WINDOW[0]} turns |")
    print("|---|---|---|---|---|---|---|---|---|")
    for mode in modes:
        walls, cpus, rss, n, windows = [], [], 0.0, 0, []
        for _ in range(args.runs):
            w, c, r, n, win, cache = measure(args.keel, repo, mode, turns, script_path)
            if cache:
                caches[mode] = cache
            walls.append(w)
            cpus.append(c)
            rss = max(rss, r)
            if win:
                windows.append(win)
        cpu = statistics.median(cpus)
        own = max(cpu - shells, 0.0)
        growth = "–"
        if windows:
            growth = (f"{statistics.median(w[0] for w in windows):.2f} / "
                      f"{statistics.median(w[1] for w in windows):.2f} ms")
        wall = statistics.median(walls)
        print(f"| {mode} | {n} | {wall * 1000:.0f} ms | {cpu * 1000:.0f} ms | {wall / cpu:.2f} | "
              f"{cpu * 1000 / n:.2f} ms | {own * 1000 / n:.2f} ms | {rss:.1f} MiB | {growth} |")
    for mode, n in SUMMARIES.items():
        print(f"autocompactions ({mode}, the last run): {n} summary request(s), answered by the scripted server")
    for mode, b in FIXED.items():
        print(f"fixed prefix ({mode}: tool definitions and system text, first request): {b} bytes, "
              f"about {b / 4000:.1f}k tokens at 4 bytes a token")
    for mode, c in caches.items():
        print(f"prompt cache ({mode}, the last run's {c.requests} requests; tokens estimated at 4 bytes): "
              f"sent {c.sent / 1000:.0f}k, cache reads {c.read / 1000:.0f}k, cache writes {c.write / 1000:.0f}k, "
              f"uncached {c.uncached / 1000:.0f}k; cost {c.cost() / 1000:.0f}k uncached-token equivalents "
              f"(read 0.1x, write 1.25x)")
    if args.cache_trace and "sse" in caches:
        print("| request | sent | cache read | cache write |")
        print("|---|---|---|---|")
        for i, (sent, read, written) in enumerate(caches["sse"].trace):
            print(f"| {i} | {sent / 1000:.1f}k | {read / 1000:.1f}k | {written / 1000:.1f}k |")
    if args.giant:
        giant = [{"text": "x" * (10 * 1024 * 1024)}]
        cpus, walls = [], []
        for _ in range(args.runs):
            w, c, _, _, _, _ = measure(args.keel, repo, "sse", giant, script_path, piece=args.giant_piece)
            walls.append(w)
            cpus.append(c)
        print(f"one 10 MB text event (SSE, sent in {args.giant_piece} byte writes): wall {statistics.median(walls) * 1000:.0f} ms, "
              f"CPU {statistics.median(cpus) * 1000:.0f} ms (median of {args.runs})")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    try:
        main()
    finally:
        if REQUEST_TIMES:
            with open(REQUEST_TIMES_FILE, "w") as out:
                out.writelines(f"{t:.6f} {'' if c is None else f'{c:.3f}'}\n" for t, c in REQUEST_TIMES)
