"""A local stand-in for the Anthropic Messages API, so that the real Claude Code CLI can run a
scripted conversation without a network or a key.

Usage: fake_anthropic.py SCRIPT.json REQUESTS.jsonl PORT_FILE

SCRIPT is a list of replies, one per model request that offers tools (the agent's turns), in
order: {"tool_use": {"name": ..., "input": {...}}} or {"text": ...}, either with "sleep": SECONDS to
answer only after that long (a turn in progress, to cancel). Once the script is used up,
every further turn answers "done". Every request body is appended to REQUESTS as one JSON line
(so a test can see which tools the agent was offered). The chosen port is written to PORT_FILE.
Streaming (server-sent events) and plain JSON replies are both served, as the API does.
"""
import json
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

script_path, requests_path, port_file = sys.argv[1:4]
with open(script_path) as f:
    SCRIPT = json.load(f)
LOCK = threading.Lock()
STATE = {"turn": 0}


def reply_for(body):
    """The next scripted reply for an agent turn; side requests (no tools) get plain text."""
    if not body.get("tools"):
        return {"text": "ok"}
    with LOCK:
        i = STATE["turn"]
        STATE["turn"] += 1
    return SCRIPT[i] if i < len(SCRIPT) else {"text": "done"}


def content_blocks(reply):
    if "tool_use" in reply:
        t = reply["tool_use"]
        return [{"type": "tool_use", "id": "toolu_" + uuid.uuid4().hex[:24], "name": t["name"], "input": t["input"]}], "tool_use"
    return [{"type": "text", "text": reply["text"]}], "end_turn"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.send_json(200, {"data": [], "has_more": False})

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def send_json(self, code, obj):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        with LOCK:
            with open(requests_path, "a") as f:
                f.write(json.dumps({"path": self.path, "body": body}) + "\n")
        if "count_tokens" in self.path:
            return self.send_json(200, {"input_tokens": 10})
        if not self.path.startswith("/v1/messages"):
            return self.send_json(200, {})
        reply = reply_for(body)
        if reply.get("sleep"):
            import time  # noqa: E402

            time.sleep(reply["sleep"])
        blocks, stop = content_blocks(reply)
        model = body.get("model", "claude-stand-in")
        msg_id = "msg_" + uuid.uuid4().hex[:24]
        usage = {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        if not body.get("stream"):
            return self.send_json(200, {"id": msg_id, "type": "message", "role": "assistant", "model": model,
                                        "content": blocks, "stop_reason": stop, "stop_sequence": None, "usage": usage})
        events = [("message_start", {"type": "message_start", "message": {
            "id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": usage}})]
        for i, b in enumerate(blocks):
            if b["type"] == "text":
                events.append(("content_block_start", {"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}}))
                events.append(("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": b["text"]}}))
            else:
                events.append(("content_block_start", {"type": "content_block_start", "index": i, "content_block": {
                    "type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}}))
                events.append(("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {
                    "type": "input_json_delta", "partial_json": json.dumps(b["input"])}}))
            events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
        events.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 5}}))
        events.append(("message_stop", {"type": "message_stop"}))
        data = "".join(f"event: {name}\ndata: {json.dumps(obj)}\n\n" for name, obj in events).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
import os  # noqa: E402

os.rename(port_file + ".tmp", port_file)
server.serve_forever()
