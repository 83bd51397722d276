"""A local stand-in for the Gemini API (generativelanguage `v1beta`), so that the real Gemini CLI
can run a scripted conversation without a network or a key.

Usage: fake_gemini.py SCRIPT.json REQUESTS.jsonl PORT_FILE

SCRIPT is a list of replies, one per model request that offers tools (the agent's turns), in
order: {"call": {"name": ..., "args": {...}}} (a function call), {"text": ...} (streamed in a few
chunks) or {"hold": SECONDS} (answer nothing for that long: a turn to cancel). Once the script is
used up, every further turn answers "done". Side requests (no tools: the CLI's session summary,
routing) get a short text. Every request is appended to REQUESTS as one JSON line, its path and
body, before it is answered (so a test sees what each turn sent, and that a held one arrived).
The chosen port is written to PORT_FILE. `streamGenerateContent?alt=sse` is answered with
server-sent events, `generateContent` with one JSON reply, as the API does.
"""
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

script_path, requests_path, port_file = sys.argv[1:4]
with open(script_path) as f:
    SCRIPT = json.load(f)
LOCK = threading.Lock()
STATE = {"turn": 0}
MODEL = "gemini-2.5-flash"


def reply_for(body):
    """The next scripted reply for an agent turn; side requests (no tools) get plain text."""
    if not body.get("tools"):
        return {"text": "ok"}
    with LOCK:
        i = STATE["turn"]
        STATE["turn"] += 1
    return SCRIPT[i] if i < len(SCRIPT) else {"text": "done"}


def usage():
    return {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}


def chunks(reply):
    """The response chunks of one reply, the last one with its finish reason."""
    if "call" in reply:
        c = reply["call"]
        parts = [[{"functionCall": {"name": c["name"], "args": c.get("args", {})}}]]
    else:
        text = reply["text"]
        step = max(1, len(text) // 3)
        parts = [[{"text": text[i:i + step]}] for i in range(0, len(text), step)] or [[{"text": ""}]]
    out = []
    for n, p in enumerate(parts):
        cand = {"content": {"role": "model", "parts": p}, "index": 0}
        if n == len(parts) - 1:
            cand["finishReason"] = "STOP"
        out.append({"candidates": [cand], "usageMetadata": usage(), "modelVersion": MODEL})
    return out


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send_json(self, code, obj):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.send_json(200, {"models": []})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        with LOCK:
            with open(requests_path, "a") as f:
                f.write(json.dumps({"path": self.path, "ts": time.time(), "body": body}) + "\n")
        if ":countTokens" in self.path:
            return self.send_json(200, {"totalTokens": 10})
        if ":streamGenerateContent" not in self.path and ":generateContent" not in self.path:
            return self.send_json(200, {})
        reply = reply_for(body)
        if "hold" in reply:
            time.sleep(float(reply["hold"]))
            reply = {"text": "held"}
        parts = chunks(reply)
        if ":streamGenerateContent" not in self.path:
            merged = [p for c in parts for p in c["candidates"][0]["content"]["parts"]]
            return self.send_json(200, {"candidates": [{"content": {"role": "model", "parts": merged},
                                                        "finishReason": "STOP", "index": 0}],
                                        "usageMetadata": usage(), "modelVersion": MODEL})
        data = "".join(f"data: {json.dumps(c)}\r\n\r\n" for c in parts).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
with open(port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(port_file + ".tmp", port_file)
server.serve_forever()
