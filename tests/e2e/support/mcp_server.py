#!/usr/bin/env python3
"""A small MCP server for keel's tests (standard library only).

Transports: stdio (default), streamable HTTP (--http), legacy HTTP+SSE (--sse). In HTTP modes it
prints `PORT <n>` on stdout once it listens on 127.0.0.1.

Tools: echo, fail (isError), crash (the process exits), sleep (seconds), image, structured,
big (size characters), resume_test (HTTP: the SSE response breaks after a priming event and the
result is delivered on the client's GET with Last-Event-ID), and --fillers N filler tools.
Resources: test://docs/readme. Prompts: review(topic).

--elicit (stdio): a tool `ask` that sends the client an `elicitation/create` form (name, with a
default, and count) and reports the answer. --oauth (HTTP): the server is also its own OAuth
authorization server (protected-resource and authorization-server metadata, registration,
/authorize redirecting at once with a code, /token with PKCE checks and refresh); /mcp (with --sse:
the /sse stream and its messages) wants a bearer token it issued that has not expired
(--token-ttl seconds). Every token request is logged
as {"token": grant, ...}. --insecure-endpoints: the metadata names a plain-http token endpoint
on another host.

--log FILE appends one JSON object per line: every message received ({"recv": msg}), and in
HTTP modes every request ({"http": method, "path", "headers"}). --read-delay S (stdio): a busy
server, which takes S seconds over each message it reads before it notes it.
"""

import argparse
import json
import os
import queue
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PNG_1PX = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)

ARGS = None
LOG_LOCK = threading.Lock()
LATE_TOOL = threading.Event()


def log(obj):
    if not ARGS.log:
        return
    with LOG_LOCK:
        with open(ARGS.log, "a") as f:
            f.write(json.dumps(obj) + "\n")


def tools():
    out = [
        {"name": "echo", "description": "Echoes back the message it is given",
         "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}},
        {"name": "fail", "description": "Always reports a failure",
         "inputSchema": {"type": "object", "properties": {}}},
        {"name": "crash", "description": "Makes the server process exit",
         "inputSchema": {"type": "object", "properties": {}}},
        {"name": "sleep", "description": "Waits for the given number of seconds",
         "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}}, "required": ["seconds"]}},
        {"name": "image", "description": "Returns a tiny PNG image",
         "inputSchema": {"type": "object", "properties": {}}},
        {"name": "structured", "description": "Returns structured content only",
         "inputSchema": {"type": "object", "properties": {}}},
        {"name": "big", "description": "Returns a long text",
         "inputSchema": {"type": "object", "properties": {"size": {"type": "integer"}}, "required": ["size"]}},
        {"name": "resume_test", "description": "Answers after the response stream broke once",
         "inputSchema": {"type": "object", "properties": {}}},
        {"name": "add_tool", "description": "Adds the tool late_tool and announces the change",
         "inputSchema": {"type": "object", "properties": {}}},
    ]
    if ARGS.elicit:
        out.append({"name": "ask", "description": "Asks the user for a name and a count",
                    "inputSchema": {"type": "object", "properties": {}}})
    if LATE_TOOL.is_set():
        out.append({"name": "late_tool", "description": "A tool added while the session runs",
                    "inputSchema": {"type": "object", "properties": {}}})
    for i in range(ARGS.fillers):
        # About a kilobyte each, like the tools of real servers.
        out.append({
            "name": f"filler_{i:03d}",
            "description": f"Filler tool number {i}: looks up record {i} in the inventory database and returns "
                           f"its fields. Use it for inventory reports, stock questions and audits of warehouse "
                           f"{i % 7}. Records are identified by their id; fields default to all. The answer lists "
                           f"each field on its own line as `name: value`, in the order the fields were asked for.",
            "inputSchema": {"type": "object", "properties": {
                "record": {"type": "string", "description": "The record id to look up in the inventory"},
                "fields": {"type": "array", "items": {"type": "string"},
                           "description": "Fields to return; all fields when left out"},
                "warehouse": {"type": "integer", "description": "Only look in this warehouse (0-6)"},
                "include_history": {"type": "boolean", "description": "Also list the record's past changes"},
                "format": {"type": "string", "enum": ["lines", "json", "table"],
                           "description": "How to lay out the answer"},
            }, "required": ["record"]},
        })
    return out


def text(t, is_error=False):
    r = {"content": [{"type": "text", "text": t}]}
    if is_error:
        r["isError"] = True
    return r


def call_tool(name, args):
    if name == "echo":
        return text("Echo: " + str(args.get("message", "")))
    if name == "fail":
        return text("this tool always fails", is_error=True)
    if name == "crash":
        sys.stderr.write("crashing on request\n")
        sys.stderr.flush()
        os._exit(3)
    if name == "sleep":
        time.sleep(float(args.get("seconds", 1)))
        return text("slept")
    if name == "image":
        return {"content": [{"type": "text", "text": "a pixel:"},
                            {"type": "image", "data": PNG_1PX, "mimeType": "image/png"}]}
    if name == "structured":
        return {"content": [], "structuredContent": {"temperature": 21.5, "unit": "C"}}
    if name == "big":
        return text("x" * int(args.get("size", 10)))
    if name == "resume_test":
        return text("resumed result")
    if name == "add_tool":
        LATE_TOOL.set()
        return text("added late_tool")
    if name == "ask":
        answer = ELICIT["ask"]({
            "message": "Who are you?",
            "requestedSchema": {"type": "object", "properties": {
                "name": {"type": "string", "default": "Ann"},
                "count": {"type": "integer", "default": 3}}, "required": ["name"]}})
        return text("answer: " + json.dumps(answer, sort_keys=True))
    if name == "late_tool":
        return text("late tool works")
    if name.startswith("filler_"):
        return text(f"{name}: record {args.get('record')}")
    return text(f"Unknown tool: {name}", is_error=True)


def handle(msg, logged=False):
    """The response to a request (None for notifications)."""
    if not logged:
        log({"recv": msg})
    method = msg.get("method")
    if "id" not in msg or method is None:
        return None
    mid = msg["id"]
    params = msg.get("params") or {}
    if method == "initialize":
        result = {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {"listChanged": False}, "resources": {}, "prompts": {}},
            "serverInfo": {"name": "keel-test-server", "version": "1.0.0"},
        }
    elif method == "tools/list":
        result = {"tools": tools()}
    elif method == "tools/call":
        result = call_tool(params.get("name", ""), params.get("arguments") or {})
    elif method == "resources/list":
        result = {"resources": [{"uri": "test://docs/readme", "name": "readme", "mimeType": "text/plain",
                                 "description": "The project readme"}]}
    elif method == "resources/read":
        uri = params.get("uri")
        if uri != "test://docs/readme":
            return {"jsonrpc": "2.0", "id": mid, "error": {"code": -32002, "message": f"no resource {uri}"}}
        result = {"contents": [{"uri": uri, "mimeType": "text/plain", "text": "README CONTENT"}]}
    elif method == "prompts/list":
        result = {"prompts": [{"name": "review", "description": "Review a topic",
                               "arguments": [{"name": "topic", "required": True}]}]}
    elif method == "prompts/get":
        topic = (params.get("arguments") or {}).get("topic", "")
        result = {"messages": [{"role": "user", "content": {"type": "text", "text": f"Please review: {topic}"}}]}
    elif method == "ping":
        result = {}
    else:
        return {"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": f"unknown method {method}"}}
    return {"jsonrpc": "2.0", "id": mid, "result": result}


ELICIT = {}


def run_stdio():
    log({"pid": os.getpid(), "cwd": os.getcwd(), "project_dir": os.environ.get("CLAUDE_PROJECT_DIR")})
    sys.stderr.write("test server starting\n")
    sys.stderr.flush()
    if ARGS.start_delay:
        time.sleep(ARGS.start_delay)
    if ARGS.die_at_start:
        sys.stderr.write("cannot start: missing configuration\n")
        sys.exit(2)
    out_lock = threading.Lock()

    def reply(msg):
        resp = handle(msg, logged=True)
        if resp is not None:
            with out_lock:
                if (msg.get("params") or {}).get("name") == "add_tool":
                    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}) + "\n")
                sys.stdout.write(json.dumps(resp) + "\n")
                sys.stdout.flush()

    waiting = {}

    def ask(params):
        rid = "el-" + uuid.uuid4().hex[:8]
        box = {"event": threading.Event()}
        waiting[rid] = box
        with out_lock:
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": rid, "method": "elicitation/create", "params": params}) + "\n")
            sys.stdout.flush()
        box["event"].wait(30)
        return box.get("answer")

    ELICIT["ask"] = ask
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if isinstance(msg, dict) and str(msg.get("id", "")).startswith("el-") and "method" not in msg:
            log({"recv": msg})
            box = waiting.pop(msg["id"], None)
            if box is not None:
                box["answer"] = msg.get("result", msg.get("error"))
                box["event"].set()
            continue
        if ARGS.read_delay:
            time.sleep(ARGS.read_delay)
        # Logged as read (a message is on record even if the process is killed right after);
        # requests run on their own threads so a slow one does not hide a cancellation.
        log({"recv": msg})
        threading.Thread(target=reply, args=(msg,), daemon=True).start()


OAUTH = {"codes": {}, "tokens": {}, "refresh": set(), "n": 0}


class State:
    lock = threading.Lock()
    sessions = {}  # session id -> queue of (event id, data) for the GET stream
    resumable = {}  # priming event id -> the data owed to a GET that resumes after it
    counter = 0

    @classmethod
    def next_id(cls):
        with cls.lock:
            cls.counter += 1
            return f"ev-{cls.counter}"


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def record(self):
        log({"http": self.command, "path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}})

    def json_reply(self, status, obj, extra=None):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def base(self):
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def oauth_get(self):
        """The authorization server's GET endpoints; True when the request was one."""
        from urllib.parse import urlparse, parse_qs, urlencode
        url = urlparse(self.path)
        base = self.base()
        if url.path == "/.well-known/oauth-protected-resource" + resource_path():
            self.json_reply(200, {"resource": base + resource_path(), "authorization_servers": [base],
                                  "scopes_supported": ["tools"]})
            return True
        if url.path == "/.well-known/oauth-authorization-server":
            token = "http://auth.example.test/token" if ARGS.insecure_endpoints else base + "/token"
            self.json_reply(200, {"issuer": base, "authorization_endpoint": base + "/authorize",
                                  "token_endpoint": token, "registration_endpoint": base + "/register",
                                  "response_types_supported": ["code"],
                                  "grant_types_supported": ["authorization_code", "refresh_token"],
                                  "code_challenge_methods_supported": ["S256"],
                                  "token_endpoint_auth_methods_supported": ["none"]})
            return True
        if url.path == "/authorize":
            q = {k: v[0] for k, v in parse_qs(url.query).items()}
            log({"authorize": q})
            code = "code-" + uuid.uuid4().hex[:8]
            OAUTH["codes"][code] = q
            target = q["redirect_uri"] + "?" + urlencode({"code": code, "state": q.get("state", "")})
            self.send_response(302)
            self.send_header("Location", target)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return True
        return False

    def oauth_post(self):
        from urllib.parse import parse_qs
        import base64
        import hashlib
        if self.path == "/register":
            body = self.body()
            log({"register": body})
            self.json_reply(201, {"client_id": "client-1", "redirect_uris": body.get("redirect_uris", []),
                                  "token_endpoint_auth_method": "none"})
            return True
        if self.path != "/token":
            return False
        n = int(self.headers.get("Content-Length") or 0)
        form = {k: v[0] for k, v in parse_qs(self.rfile.read(n).decode()).items()}
        log({"token": form.get("grant_type"), "form": {k: v for k, v in form.items() if k != "code_verifier"}})
        if form.get("grant_type") == "authorization_code":
            asked = OAUTH["codes"].pop(form.get("code", ""), None)
            verifier = form.get("code_verifier", "")
            digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
            if not asked or asked.get("code_challenge") != digest or asked.get("code_challenge_method") != "S256":
                self.json_reply(400, {"error": "invalid_grant"})
                return True
        elif form.get("grant_type") == "refresh_token":
            if form.get("refresh_token") not in OAUTH["refresh"]:
                self.json_reply(400, {"error": "invalid_grant"})
                return True
        else:
            self.json_reply(400, {"error": "unsupported_grant_type"})
            return True
        OAUTH["n"] += 1
        access = f"at-{OAUTH['n']}"
        refresh = f"rt-{OAUTH['n']}"
        OAUTH["tokens"][access] = time.time() + ARGS.token_ttl
        OAUTH["refresh"].add(refresh)
        self.json_reply(200, {"access_token": access, "token_type": "Bearer", "expires_in": ARGS.token_ttl,
                              "refresh_token": refresh, "scope": "tools"})
        return True

    def deny_unauthorized(self):
        if ARGS.oauth:
            token = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
            if OAUTH["tokens"].get(token, 0) > time.time():
                return False
            meta = self.base() + "/.well-known/oauth-protected-resource" + resource_path()
            self.json_reply(401, {"error": "invalid_token"},
                            {"WWW-Authenticate": f'Bearer resource_metadata="{meta}", scope="tools"'})
            return True
        if ARGS.require_auth and self.headers.get("Authorization") != f"Bearer {ARGS.require_auth}":
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Bearer realm="test"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return True
        return False

    def sse_headers(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()

    def event(self, data, event_id=None, event=None):
        chunk = ""
        if event:
            chunk += f"event: {event}\n"
        if event_id:
            chunk += f"id: {event_id}\n"
        chunk += f"data: {data}\n\n"
        self.wfile.write(chunk.encode())
        self.wfile.flush()

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(n) or b"null")

    def do_DELETE(self):
        self.record()
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        self.record()
        if ARGS.oauth and self.oauth_get():
            return
        if self.deny_unauthorized():
            return
        if ARGS.sse:
            return self.legacy_stream()
        sid = self.headers.get("Mcp-Session-Id")
        if sid not in State.sessions:
            self.send_response(405 if sid is None else 404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        last = self.headers.get("Last-Event-ID")
        if last is not None:
            owed = State.resumable.pop(last, None)
            if owed is None:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.sse_headers()
            self.event(owed, event_id=State.next_id())
            return
        self.stream(State.sessions[sid])

    def stream(self, q):
        self.sse_headers()
        try:
            while True:
                try:
                    event_id, data = q.get(timeout=0.5)
                except queue.Empty:
                    self.wfile.write(b": keep-alive\n\n")
                    self.wfile.flush()
                    continue
                self.event(data, event_id=event_id, event="message" if ARGS.sse else None)
        except (BrokenPipeError, ConnectionResetError):
            return

    def legacy_stream(self):
        sid = uuid.uuid4().hex
        q = queue.Queue()
        State.sessions[sid] = q
        self.sse_headers()
        try:
            endpoint = f"/messages?session={sid}"
            if ARGS.foreign_endpoint:
                endpoint = f"http://127.0.0.2:{self.server.server_address[1]}{endpoint}"
            self.event(endpoint, event="endpoint")
        except (BrokenPipeError, ConnectionResetError):
            return
        self.stream(q)

    def do_POST(self):
        self.record()
        if ARGS.oauth and self.oauth_post():
            return
        if self.deny_unauthorized():
            return
        msg = self.body()
        if ARGS.sse:
            sid = self.path.split("session=")[-1]
            q = State.sessions.get(sid)
            if q is None:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            resp = handle(msg)
            if resp is not None:
                q.put((None, json.dumps(resp)))
            return
        sid = self.headers.get("Mcp-Session-Id")
        is_init = isinstance(msg, dict) and msg.get("method") == "initialize"
        if is_init:
            sid = uuid.uuid4().hex
            State.sessions[sid] = queue.Queue()
        elif sid not in State.sessions:
            self.send_response(404 if sid else 400)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        resp = handle(msg)
        if resp is None:
            self.send_response(202)
            self.send_header("Mcp-Session-Id", sid)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if msg.get("method") == "tools/call" and (msg.get("params") or {}).get("name") == "resume_test":
            # A priming event, then the stream breaks; the result goes to the resumed GET stream.
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Mcp-Session-Id", sid)
            self.end_headers()
            priming = State.next_id()
            State.resumable[priming] = json.dumps(resp)
            self.event("", event_id=priming)
            self.close_connection = True
            return
        if msg.get("method") == "tools/call":
            # Tool results come as an SSE response, other answers as plain JSON.
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Mcp-Session-Id", sid)
            self.end_headers()
            self.event(json.dumps(resp), event_id=State.next_id())
            self.close_connection = True
            return
        data = json.dumps(resp).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Mcp-Session-Id", sid)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def resource_path():
    """The path of the protected resource: the stream's with --sse, else the endpoint's."""
    return "/sse" if ARGS.sse else "/mcp"


def run_http():
    log({"pid": os.getpid()})
    server = ThreadingHTTPServer(("127.0.0.1", ARGS.port), Handler)
    server.daemon_threads = True
    sys.stdout.write(f"PORT {server.server_address[1]}\n")
    sys.stdout.flush()
    server.serve_forever()


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--http", action="store_true")
    p.add_argument("--sse", action="store_true")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--fillers", type=int, default=0)
    p.add_argument("--log")
    p.add_argument("--require-auth")
    p.add_argument("--elicit", action="store_true")
    p.add_argument("--oauth", action="store_true")
    p.add_argument("--token-ttl", type=int, default=3600)
    p.add_argument("--insecure-endpoints", action="store_true")
    p.add_argument("--die-at-start", action="store_true")
    p.add_argument("--read-delay", type=float, default=0.0)
    p.add_argument("--foreign-endpoint", action="store_true", help="legacy SSE: name an endpoint on another origin")
    p.add_argument("--start-delay", type=float, default=0.0, help="seconds to wait before serving (start-up cost)")
    ARGS = p.parse_args()
    if ARGS.http or ARGS.sse:
        run_http()
    else:
        run_stdio()


if __name__ == "__main__":
    main()
