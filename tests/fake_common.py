"""What the local stand-ins for the model APIs share (`tests/fake_anthropic.py`,
`fake_openai.py`, `fake_gemini.py`): their command line, the scripted replies taken in order,
every request recorded before it is answered, JSON replies, and serving on a free port.

Usage of each stand-in: fake_X.py SCRIPT.json REQUESTS.jsonl PORT_FILE. SCRIPT is a JSON list
of replies, one per agent turn, in order; once it is used up every further turn answers "done".
A reply may say the tokens it used (`usage_of`), which each stand-in reports as its API does.
A reply {"limit": {"status": 429, "headers": {...}, "message": ...}} answers the turn with that
HTTP error instead (`Handler.send_limit`): a rate or usage limit, with the headers that say when
it resets (`retry-after`, `anthropic-ratelimit-unified-reset`, ...), in the API's error body.
Every request is appended to REQUESTS as one JSON line (its path, its time, its body, and its
headers where the stand-in asks for them). The chosen port is written to PORT_FILE (whole:
written aside, then renamed).
"""
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SCRIPT_PATH, REQUESTS_PATH, PORT_FILE = sys.argv[1:4]
with open(SCRIPT_PATH) as f:
    SCRIPT = json.load(f)
LOCK = threading.Lock()
STATE = {"turn": 0}


def next_reply():
    """The next scripted reply ({"text": "done"} once the script is used up)."""
    with LOCK:
        i = STATE["turn"]
        STATE["turn"] += 1
    return SCRIPT[i] if i < len(SCRIPT) else {"text": "done"}


def reply_for(body):
    """The next scripted reply for an agent turn; side requests (no tools) get plain text, and
    use no tokens (so that what an agent reports is what its turns were served)."""
    if not body.get("tools"):
        return {"text": "ok", "usage": {"input": 0, "output": 0, "cached": 0}}
    return next_reply()


def usage_of(reply):
    """The tokens a reply says it used: its "usage" ({"input", "output", "cached"}: input not
    read from a cache, output, input read from one), else 10 in and 5 out; each one served is
    appended to REQUESTS.usage.jsonl, so that a test can add up what the agent was served."""
    u = {"input": 10, "output": 5, "cached": 0}
    u.update(reply.get("usage") or {})
    with LOCK:
        with open(REQUESTS_PATH + ".usage.jsonl", "a") as f:
            f.write(json.dumps(u) + "\n")
    return u


class Handler(BaseHTTPRequestHandler):
    """A stand-in's handler: quiet, HTTP/1.1, with JSON replies and recorded requests."""

    protocol_version = "HTTP/1.1"
    # Whether a request's headers go into REQUESTS too.
    record_headers = False

    def log_message(self, *args):
        pass

    def send_json(self, code, obj):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_limit(self, limit, body):
        """A scripted limit: its status (429 unless said), its headers, and `body` (the API's
        error body) as JSON."""
        data = json.dumps(body).encode()
        self.send_response(int(limit.get("status", 429)))
        self.send_header("Content-Type", "application/json")
        for k, v in (limit.get("headers") or {}).items():
            self.send_header(k, str(v))
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_events(self, data):
        """A whole server-sent-events body, with its length."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def read_request(self):
        """The request's JSON body ({} if it is none), recorded before anything answers it."""
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        record = {"path": self.path, "ts": time.time(), "body": body}
        if self.record_headers:
            record["headers"] = {k.lower(): v for k, v in self.headers.items()}
        with LOCK:
            with open(REQUESTS_PATH, "a") as f:
                f.write(json.dumps(record) + "\n")
        return body


def serve(handler):
    """Serve `handler` on a free local port, written to PORT_FILE, until killed."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    with open(PORT_FILE + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(PORT_FILE + ".tmp", PORT_FILE)
    server.serve_forever()
