"""A tiny language server for keel's tests: every line containing BAD is an error, every line
containing MEH a warning. `--slow-init SECONDS` delays the answer to initialize; `--record FILE`
writes there what the server was given (its environment, its initializationOptions, the client's
answer to its configuration request)."""
import json
import os
import sys
import time

slow = float(sys.argv[sys.argv.index("--slow-init") + 1]) if "--slow-init" in sys.argv else 0.0
record = sys.argv[sys.argv.index("--record") + 1] if "--record" in sys.argv else None
seen = {}


def note(key, value):
    if record:
        seen[key] = value
        with open(record, "w") as f:
            json.dump(seen, f)

inp, out = sys.stdin.buffer, sys.stdout.buffer


def read():
    length = None
    while True:
        line = inp.readline()
        if not line:
            sys.exit(0)
        line = line.strip()
        if not line:
            if length is not None:
                break
            continue
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return json.loads(inp.read(length))


def send(message):
    body = json.dumps(message).encode()
    out.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    out.flush()


def publish(uri, version, text):
    diagnostics = []
    for n, line in enumerate(text.split("\n")):
        for word, severity in (("BAD", 1), ("MEH", 2)):
            col = line.find(word)
            if col >= 0:
                diagnostics.append({
                    "range": {"start": {"line": n, "character": col}, "end": {"line": n, "character": col + 3}},
                    "severity": severity,
                    "message": "found %s" % word,
                })
    send({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics",
          "params": {"uri": uri, "version": version, "diagnostics": diagnostics}})


while True:
    msg = read()
    method = msg.get("method")
    if method == "initialize":
        note("env", dict(os.environ))
        note("initializationOptions", msg["params"].get("initializationOptions"))
        time.sleep(slow)
        # A request of the server's own, which the client must answer (when recording, before
        # the handshake ends, so the answer is read before the first file arrives).
        cfg = {"jsonrpc": "2.0", "id": "cfg", "method": "workspace/configuration",
               "params": {"items": [{}, {"section": "rust-analyzer"}]}}
        if record:
            send(cfg)
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"capabilities": {"textDocumentSync": 1}}})
        if not record:
            send(cfg)
    elif msg.get("id") == "cfg" and method is None:
        note("configuration", msg.get("result"))
    elif method == "textDocument/didOpen":
        doc = msg["params"]["textDocument"]
        publish(doc["uri"], doc["version"], doc["text"])
    elif method == "textDocument/didChange":
        p = msg["params"]
        publish(p["textDocument"]["uri"], p["textDocument"]["version"], p["contentChanges"][-1]["text"])
    elif method == "shutdown":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
    elif method == "exit":
        sys.exit(0)
