"""A tiny language server for keel's tests: every line containing BAD is an error, every line
containing MEH a warning. `--slow-init SECONDS` delays the answer to initialize."""
import json
import sys
import time

slow = float(sys.argv[sys.argv.index("--slow-init") + 1]) if "--slow-init" in sys.argv else 0.0
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
        time.sleep(slow)
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"capabilities": {"textDocumentSync": 1}}})
        # A request of the server's own, which the client must answer.
        send({"jsonrpc": "2.0", "id": "cfg", "method": "workspace/configuration", "params": {"items": [{}]}})
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
