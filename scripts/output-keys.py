#!/usr/bin/env python3
"""Coverage of the reference CLI's headless output fields by keel's.

Runs four sessions against a scripted Anthropic Messages server on loopback — a multi-tool
`stream-json --verbose` session, a `json` session, a session whose calls are denied until it hits
`--max-turns`, and one with `--include-partial-messages` — collects the JSON key paths of every
output line (arrays collapsed to `[]`, keyed by the line's `type` or `type/subtype`), and compares
them with `scripts/output-keys.reference.json`, the key paths and value types the reference CLI
printed for the same sessions.

    scripts/output-keys.py [--keel PATH] [--min 0.95] [--show-missing]
    scripts/output-keys.py --observe-reference PATH_TO_REFERENCE_CLI   # rewrites the reference list

Only formats are recorded (key paths and JSON types), never values. Exits 1 when the coverage of
the reference's key paths is below --min, or when a shared path's type differs.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
REFERENCE = os.path.join(HERE, "output-keys.reference.json")
MODEL = "claude-sonnet-4-5-20250929"

# Keys whose children are names (models, servers, tools), not fields.
NAME_MAPS = {"modelUsage", "model_usage_since_last_result", "by_type"}


def sse(events):
    out = []
    for e in events:
        out.append(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n")
    return "".join(out).encode()


def turn_body(turn, n):
    """One streamed Messages response: optional text, then tool calls."""
    msg_id = f"msg_scripted_{n:03d}"
    usage = {"input_tokens": 120 + n, "output_tokens": 0, "cache_creation_input_tokens": 40,
             "cache_read_input_tokens": 10,
             "cache_creation": {"ephemeral_5m_input_tokens": 40, "ephemeral_1h_input_tokens": 0}}
    events = [{"type": "message_start", "message": {
        "id": msg_id, "type": "message", "role": "assistant", "model": MODEL, "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": usage}}]
    index = 0
    if turn.get("text"):
        events.append({"type": "content_block_start", "index": index,
                       "content_block": {"type": "text", "text": ""}})
        for word in turn["text"].split(" "):
            events.append({"type": "content_block_delta", "index": index,
                           "delta": {"type": "text_delta", "text": word + " "}})
        events.append({"type": "content_block_stop", "index": index})
        index += 1
    for k, call in enumerate(turn.get("tools", [])):
        events.append({"type": "content_block_start", "index": index, "content_block": {
            "type": "tool_use", "id": f"toolu_scripted_{n}_{k}", "name": call[0], "input": {}}})
        events.append({"type": "content_block_delta", "index": index,
                       "delta": {"type": "input_json_delta", "partial_json": json.dumps(call[1])}})
        events.append({"type": "content_block_stop", "index": index})
        index += 1
    stop = "tool_use" if turn.get("tools") else "end_turn"
    events.append({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                   "usage": {"output_tokens": 25 + n}})
    events.append({"type": "message_stop"})
    return sse(events)


class Server:
    """Answers a main-loop request (one that offers tools) with the turn numbered by how many
    assistant messages the conversation already has; any side request with a short text."""

    def __init__(self, turns):
        outer = self
        self.turns = turns

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("content-length", 0)))
                try:
                    req = json.loads(raw or b"{}")
                except ValueError:
                    req = {}
                if "count_tokens" in self.path:
                    return self.reply(b'{"input_tokens": 100}', "application/json")
                if req.get("tools"):
                    n = sum(1 for m in req.get("messages", []) if m.get("role") == "assistant")
                    turn = outer.turns[min(n, len(outer.turns) - 1)]
                else:
                    n, turn = 99, {"text": "side answer"}
                if not req.get("stream"):
                    body = {"id": f"msg_side_{n}", "type": "message", "role": "assistant",
                            "model": MODEL, "content": [{"type": "text", "text": turn.get("text") or "ok"}],
                            "stop_reason": "end_turn", "stop_sequence": None,
                            "usage": {"input_tokens": 10, "output_tokens": 3}}
                    return self.reply(json.dumps(body).encode(), "application/json")
                self.reply(turn_body(turn, n), "text/event-stream")

            def do_GET(self):
                self.reply(b"{}", "application/json")

            def do_HEAD(self):
                self.reply(b"", "application/json")

            def reply(self, body, ctype):
                self.send_response(200)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self):
        self.httpd.shutdown()


def sessions(work):
    notes = os.path.join(work, "notes.txt")
    return {
        "multi_tool_stream_json": {
            "args": ["--output-format", "stream-json", "--verbose",
                     "--allowedTools", "Bash,Read,Glob,Grep,Write,Edit"],
            "turns": [
                {"text": "Looking around.", "tools": [
                    ["Bash", {"command": "echo hello", "description": "Say hello"}],
                    ["Read", {"file_path": notes}],
                    ["Glob", {"pattern": "*.txt"}]]},
                {"tools": [["Grep", {"pattern": "alpha", "output_mode": "content"}],
                           ["Bash", {"command": "mkdir -p made", "description": "Make a folder"}],
                           ["Write", {"file_path": os.path.join(work, "out.txt"), "content": "x\n"}]]},
                {"tools": [["Edit", {"file_path": notes, "old_string": "alpha", "new_string": "beta"}]]},
                {"text": "All done."}]},
        "json": {
            "args": ["--output-format", "json", "--allowedTools", "Read"],
            "turns": [{"tools": [["Read", {"file_path": notes}]]}, {"text": "The notes say alpha."}]},
        "denials_max_turns": {
            "args": ["--output-format", "stream-json", "--verbose", "--max-turns", "2"],
            "turns": [{"text": "Writing.", "tools": [
                ["Write", {"file_path": os.path.join(work, "denied.txt"), "content": "no\n"}],
                ["Bash", {"command": "touch denied2", "description": "Touch a file"}]]}]},
        "partial_messages": {
            "args": ["--output-format", "stream-json", "--verbose", "--include-partial-messages",
                     "--allowedTools", "Bash"],
            "turns": [{"text": "Running it.", "tools": [["Bash", {"command": "echo hi", "description": "Echo"}]]},
                      {"text": "It printed hi."}]},
    }


def key_paths(value, prefix, out):
    kind = type(value).__name__
    kind = {"NoneType": "null", "dict": "object", "list": "array", "str": "string",
            "int": "number", "float": "number", "bool": "boolean"}[kind]
    out.setdefault(prefix, set()).add(kind)
    if isinstance(value, dict):
        leaf = prefix.rsplit(".", 1)[-1]
        for k, v in value.items():
            name = "*" if leaf in NAME_MAPS else k
            key_paths(v, f"{prefix}.{name}", out)
    elif isinstance(value, list):
        for v in value:
            key_paths(v, prefix + "[]", out)


def line_kind(line):
    kind = str(line.get("type", "?"))
    if "subtype" in line:
        kind += "/" + str(line["subtype"])
    return kind


def collect(lines, out):
    for line in lines:
        if isinstance(line, dict):
            key_paths(line, line_kind(line), out)


def parse_output(stdout):
    text = stdout.strip()
    if not text:
        return []
    try:
        doc = json.loads(text)
        return doc if isinstance(doc, list) else [doc]
    except ValueError:
        return [json.loads(l) for l in text.splitlines() if l.strip().startswith("{")]


def run_session(command, name, spec, extra_env):
    home = tempfile.mkdtemp(prefix=f"output-keys-{name}-")
    work = os.path.join(home, "work")
    os.makedirs(work)
    with open(os.path.join(work, "notes.txt"), "w") as f:
        f.write("alpha\nbravo\n")
    spec = sessions(work)[name]
    server = Server(spec["turns"])
    env = {"PATH": os.environ.get("PATH", ""), "HOME": home, "LANG": "C.UTF-8",
           "ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "test-key"}
    env.update(extra_env(home))
    try:
        proc = subprocess.run(command + ["-p", "Look at the notes.", "--model", MODEL] + spec["args"],
                              cwd=work, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=180)
    finally:
        server.close()
    try:
        lines = parse_output(proc.stdout.decode())
    except ValueError as e:
        sys.exit(f"{name}: output is not JSON ({e}): {proc.stdout[:400]!r} {proc.stderr[:400]!r}")
    if not lines:
        sys.exit(f"{name}: no output (exit {proc.returncode}): {proc.stderr.decode()[:800]}")
    shutil.rmtree(home, ignore_errors=True)
    return lines


def gather(command, extra_env):
    paths = {}
    for name in sessions("/w"):
        collect(run_session(command, name, None, extra_env), paths)
    return {p: sorted(t) for p, t in sorted(paths.items())}


def keel_env(home):
    return {"KEEL_HOME": os.path.join(home, ".keel"), "KEEL_VERIFICATION_GATE": "off"}


def reference_env(home):
    return {"IS_SANDBOX": "1", "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_ERROR_REPORTING": "1"}


def find_keel(given):
    if given:
        return given
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(HERE, "..", "target"))
    path = os.path.join(target, "debug", "keel")
    if not os.path.exists(path):
        sys.exit(f"no keel binary at {path}: build it (cargo build) or pass --keel")
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keel")
    ap.add_argument("--min", type=float, default=0.95)
    ap.add_argument("--show-missing", action="store_true")
    ap.add_argument("--observe-reference", metavar="CLI")
    a = ap.parse_args()
    if a.observe_reference:
        paths = gather([a.observe_reference], reference_env)
        with open(REFERENCE, "w") as f:
            json.dump({"about": "key paths and JSON types of the reference CLI's headless output "
                                "on the sessions of scripts/output-keys.py", "paths": paths}, f, indent=1)
            f.write("\n")
        print(f"wrote {len(paths)} key paths to {REFERENCE}")
        return
    with open(REFERENCE) as f:
        ref = json.load(f)["paths"]
    ours = gather([find_keel(a.keel)], keel_env)
    shared = [p for p in ref if p in ours]
    missing = [p for p in ref if p not in ours]
    type_diffs = [(p, ref[p], ours[p]) for p in shared if not set(ref[p]) & set(ours[p])]
    own = [p for p in ours if p not in ref]
    coverage = len(shared) / len(ref) if ref else 1.0
    print(f"reference key paths: {len(ref)}; present in keel: {len(shared)} ({coverage:.1%}); "
          f"keel's own: {len(own)}; type differences: {len(type_diffs)}")
    for p, r, o in type_diffs:
        print(f"  type differs: {p}: reference {'|'.join(r)}, keel {'|'.join(o)}")
    if a.show_missing:
        for p in missing:
            print(f"  missing: {p}")
    if coverage < a.min or type_diffs:
        sys.exit(1)


if __name__ == "__main__":
    main()
