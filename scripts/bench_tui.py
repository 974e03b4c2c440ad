#!/usr/bin/env python3
"""keel TUI benchmark.

Runs the release binary's interactive mode in a pseudo-terminal (120x40) against a loopback
server speaking the Anthropic SSE protocol, and measures:

  first frame   time from process start to the first drawn frame (the prompt box on screen),
                and RSS then
  idle CPU      CPU time used over 5 s with nothing happening (should be ~0)
  streaming     CPU use while one answer streams at 2,000 tokens/s for 10 s (markdown with
                code blocks; a token counted as 4 characters), and the bytes written to the
                terminal per second
  bytes per KB  a 14 KB answer streamed at a model's pace (400 tokens/s, 40-character deltas):
                bytes written to the terminal per KB of streamed text (what matters over SSH)
  1,000 cells   RSS after a session whose transcript holds 1,000 cells (100 model requests of
                one text block and nine tool calls each), and CPU per PageUp redraw there

CPU is utime+stime from /proc/<pid>/stat; RSS is VmRSS from /proc/<pid>/status.
Usage: scripts/bench_tui.py [--keel PATH] [--runs N] [--profile perf.data]
Independent of keel's code: it only drives the binary through a pty and reads /proc.
"""

import argparse
import fcntl
import json
import os
import pty
import select
import shutil
import statistics
import struct
import sys
import tempfile
import termios
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PROFILE = None
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLS, ROWS = 120, 40
TICKS = os.sysconf("SC_CLK_TCK")


def ev(name, data):
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


def message_start(n):
    return ev("message_start", {"type": "message_start", "message": {
        "id": f"msg_{n}", "type": "message", "role": "assistant", "content": [],
        "model": "claude-sonnet-4-5", "stop_reason": None,
        "usage": {"input_tokens": 1000, "output_tokens": 1}}})


def message_end(stop, tokens):
    return (ev("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop},
                                 "usage": {"output_tokens": tokens}})
            + ev("message_stop", {"type": "message_stop"}))


def streaming_text(tokens):
    """Markdown of about `tokens` tokens: paragraphs, lists and Python code blocks."""
    parts = []
    i = 0
    while sum(len(p) for p in parts) < tokens * 4:
        parts.append(f"## Step {i}\n\nThe function `handler_{i}` reads the input, checks the **limits** and "
                     f"returns the total. It is called from three places.\n\n- first use\n- second use\n\n")
        parts.append(f"```python\ndef handler_{i}(lines, discount=0.0):\n    subtotal = sum(l.price for l in lines)\n"
                     f"    return round(subtotal * (1 - discount), 2)\n```\n\n")
        i += 1
    return "".join(parts)


class Server:
    """Serves scripted replies in order; `paced` replies stream text chunk by chunk."""

    def __init__(self):
        self.replies = []
        self.lock = threading.Lock()
        self.stream_started = threading.Event()
        self.stream_done = threading.Event()
        self.answered = threading.Event()
        self.slow_started = threading.Event()
        self.slow_done = threading.Event()
        outer = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *a):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers.get("content-length", 0)))
                with outer.lock:
                    reply = outer.replies.pop(0) if outer.replies else None
                if reply is None:
                    self.send_response(500)
                    self.send_header("content-length", "0")
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                # Chunks are sent on an absolute schedule, so the rate holds whatever the
                # cost of each write.
                due = time.perf_counter()
                for chunk, delay in reply:
                    if delay:
                        due += delay
                        pause = due - time.perf_counter()
                        if pause > 0:
                            time.sleep(pause)
                    if chunk == b"<start>":
                        outer.stream_started.set()
                        continue
                    if chunk == b"<done>":
                        outer.stream_done.set()
                        continue
                    if chunk == b"<answered>":
                        outer.answered.set()
                        continue
                    if chunk == b"<slow-start>":
                        outer.slow_started.set()
                        continue
                    if chunk == b"<slow-done>":
                        outer.slow_done.set()
                        continue
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def push_stream(self, tokens_per_s, seconds, chunk_tokens=10, marks=(b"<start>", b"<done>")):
        text = streaming_text(int(tokens_per_s * seconds))
        size = chunk_tokens * 4
        pieces = [text[i:i + size] for i in range(0, len(text), size)]
        interval = chunk_tokens / tokens_per_s
        out = [(message_start(0), 0), (ev("content_block_start", {"type": "content_block_start", "index": 0,
                                                                  "content_block": {"type": "text", "text": ""}}), 0),
               (marks[0], 0)]
        for p in pieces:
            out.append((ev("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                   "delta": {"type": "text_delta", "text": p}}), interval))
        out.append((ev("content_block_stop", {"type": "content_block_stop", "index": 0}), 0))
        out.append((message_end("end_turn", len(text) // 4), 0))
        out.append((marks[1], 0))
        self.replies.append(out)
        return len(text)

    def push_tools(self, n, calls, path):
        blocks = [message_start(n)]
        blocks.append(ev("content_block_start", {"type": "content_block_start", "index": 0,
                                                 "content_block": {"type": "text", "text": ""}}))
        blocks.append(ev("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                 "delta": {"type": "text_delta", "text": f"Round {n}: reading files."}}))
        blocks.append(ev("content_block_stop", {"type": "content_block_stop", "index": 0}))
        for c in range(calls):
            idx = c + 1
            inp = json.dumps({"file_path": path}) if c % 2 else json.dumps({"pattern": "*.txt"})
            name = "Read" if c % 2 else "Glob"
            blocks.append(ev("content_block_start", {"type": "content_block_start", "index": idx,
                                                     "content_block": {"type": "tool_use", "id": f"t{n}_{c}", "name": name, "input": {}}}))
            blocks.append(ev("content_block_delta", {"type": "content_block_delta", "index": idx,
                                                     "delta": {"type": "input_json_delta", "partial_json": inp}}))
            blocks.append(ev("content_block_stop", {"type": "content_block_stop", "index": idx}))
        blocks.append(message_end("tool_use", 50))
        self.replies.append([(b"".join(blocks), 0)])

    def push_answer(self, text):
        self.replies.append([(message_start(99) + ev("content_block_start", {"type": "content_block_start", "index": 0,
                              "content_block": {"type": "text", "text": ""}})
                              + ev("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                           "delta": {"type": "text_delta", "text": text}})
                              + ev("content_block_stop", {"type": "content_block_stop", "index": 0})
                              + message_end("end_turn", 10), 0), (b"<answered>", 0)])

    def close(self):
        self.httpd.shutdown()


class Keel:
    """keel in a pty; output is drained continuously (a terminal that reads everything)."""

    def __init__(self, keel, server, work, home):
        env = {"PATH": os.environ.get("PATH", ""), "HOME": home, "KEEL_HOME": os.path.join(home, ".keel"),
               "TERM": "xterm-256color", "LANG": "C.UTF-8",
               "ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "bench"}
        self.started = time.perf_counter()
        pid, fd = pty.fork()
        if pid == 0:
            # Sized before keel starts: a resize racing its startup could be missed.
            fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
            os.chdir(work)
            os.execve(keel, [keel], env)
        self.pid, self.fd = pid, fd
        self.buf = bytearray()
        self.total = 0
        self.lock = threading.Lock()
        self.alive = True
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self):
        while self.alive:
            r, _, _ = select.select([self.fd], [], [], 0.2)
            if not r:
                continue
            try:
                data = os.read(self.fd, 65536)
            except OSError:
                return
            if not data:
                return
            with self.lock:
                self.total += len(data)
                self.buf += data
                if len(self.buf) > 1 << 20:
                    del self.buf[:len(self.buf) - (1 << 19)]

    def wait_for(self, needle, timeout=60):
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            with self.lock:
                if needle.encode() in self.buf:
                    return time.perf_counter()
            time.sleep(0.001)
        with self.lock:
            tail = bytes(self.buf[-400:])
        sys.exit(f"timed out waiting for {needle!r}; the terminal's last output: {tail!r}")

    def clear(self):
        with self.lock:
            self.buf.clear()

    def send(self, data):
        os.write(self.fd, data.encode())

    def cpu(self):
        with open(f"/proc/{self.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICKS

    def rss_mib(self):
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return 0.0

    def stop(self):
        self.send("\x04")
        deadline = time.time() + 10
        while time.time() < deadline:
            done, _ = os.waitpid(self.pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.05)
        else:
            os.kill(self.pid, 9)
            os.waitpid(self.pid, 0)
        self.alive = False
        os.close(self.fd)


def run(keel, tokens_per_s):
    work = tempfile.mkdtemp(prefix="keel-tui-bench-")
    home = os.path.join(work, "home")
    repo = os.path.join(work, "repo")
    os.makedirs(home)
    os.makedirs(repo)
    notes = os.path.join(repo, "notes.txt")
    with open(notes, "w") as f:
        f.write("".join(f"line {i}\n" for i in range(40)))
    server = Server()
    chars = server.push_stream(tokens_per_s, 10)
    slow_chars = server.push_stream(400, 14 * 1024 / 1600, marks=(b"<slow-start>", b"<slow-done>"))
    for n in range(100):
        server.push_tools(n, 9, notes)
    server.push_answer("Done reading.")
    k = Keel(keel, server, repo, home)
    res = {}
    res["first_frame_ms"] = (k.wait_for("Ask keel") - k.started) * 1000
    res["rss_start_mib"] = k.rss_mib()

    time.sleep(1)
    c0 = k.cpu()
    time.sleep(5)
    res["idle_cpu_pct"] = (k.cpu() - c0) / 5 * 100

    k.send("stream\r")
    server.stream_started.wait(30)
    perf = None
    if PROFILE:
        import subprocess
        perf = subprocess.Popen(["perf", "record", "--call-graph", "dwarf", "-F", "499", "-o", PROFILE, "-p", str(k.pid)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t0, c0, b0 = time.perf_counter(), k.cpu(), k.total
    server.stream_done.wait(60)
    t1, c1, b1 = time.perf_counter(), k.cpu(), k.total
    if perf:
        perf.send_signal(2)
        perf.wait()
    res["stream_cpu_pct"] = (c1 - c0) / (t1 - t0) * 100
    res["stream_tokens_per_s"] = chars / 4 / (t1 - t0)
    res["stream_term_kib_per_s"] = (b1 - b0) / 1024 / (t1 - t0)
    time.sleep(1)
    res["rss_after_stream_mib"] = k.rss_mib()

    k.send("stream at a model's pace\r")
    server.slow_started.wait(30)
    b0 = k.total
    server.slow_done.wait(60)
    time.sleep(0.5)
    res["term_bytes_per_kb"] = (k.total - b0) / (slow_chars / 1024)
    res["slow_stream_kb"] = slow_chars / 1024
    res["slow_term_kb"] = (k.total - b0) / 1024

    k.clear()
    k.send("read everything\r")
    # The screen only gets the cells that changed, so the text may not arrive in one piece:
    # wait for the server to have sent the last answer instead.
    if not server.answered.wait(180):
        sys.exit("timed out waiting for the last answer to be requested")
    time.sleep(1)
    res["rss_1000_cells_mib"] = k.rss_mib()
    c0 = k.cpu()
    pages = 50
    for _ in range(pages):
        k.send("\x1b[5~")  # PageUp
        time.sleep(0.03)
    res["cpu_per_page_ms"] = (k.cpu() - c0) / pages * 1000
    k.stop()
    server.close()
    shutil.rmtree(work, ignore_errors=True)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keel", default=os.path.join(ROOT, "target", "release", "keel"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--tokens-per-s", type=int, default=2000)
    ap.add_argument("--profile", default="", help="perf record the streaming phase into this file")
    args = ap.parse_args()
    global PROFILE
    PROFILE = args.profile or None
    if not os.path.exists(args.keel):
        sys.exit(f"{args.keel} not found: run `cargo build --release` first")
    results = [run(os.path.abspath(args.keel), args.tokens_per_s) for _ in range(args.runs)]
    print(f"keel TUI benchmark: {COLS}x{ROWS} pty, {args.runs} runs, medians")
    print("| measure | value |")
    print("|---|---|")
    labels = [
        ("first_frame_ms", "launch to first frame", "{:.0f} ms"),
        ("rss_start_mib", "RSS at the first frame", "{:.1f} MiB"),
        ("idle_cpu_pct", "idle CPU (5 s)", "{:.2f} %"),
        ("stream_tokens_per_s", "streaming rate achieved", "{:.0f} tokens/s"),
        ("stream_cpu_pct", "CPU while streaming", "{:.1f} % of one core"),
        ("stream_term_kib_per_s", "terminal output while streaming", "{:.0f} KiB/s"),
        ("rss_after_stream_mib", "RSS after the streamed answer", "{:.1f} MiB"),
        ("slow_stream_kb", "answer streamed at 400 tokens/s", "{:.1f} KB"),
        ("slow_term_kb", "terminal output for it", "{:.0f} KB"),
        ("term_bytes_per_kb", "terminal bytes per streamed KB", "{:.0f} B"),
        ("rss_1000_cells_mib", "RSS with 1,000 cells", "{:.1f} MiB"),
        ("cpu_per_page_ms", "CPU per PageUp redraw (1,000 cells)", "{:.2f} ms"),
    ]
    for key, label, fmt in labels:
        print(f"| {label} | {fmt.format(statistics.median(r[key] for r in results))} |")


if __name__ == "__main__":
    main()
