"""A local stand-in for the OpenAI Responses API (`POST /v1/responses`, streamed as server-sent
events), so that the real Codex CLI can run a scripted conversation without a network or a key.

Usage: fake_openai.py SCRIPT.json REQUESTS.jsonl PORT_FILE (the command line, the recording of
requests and the serving are `fake_common.py`'s)

SCRIPT is a list of replies, one per model request, in order:
- {"text": ...}: the model answers with text;
- {"call": {"name": ..., "namespace": ..., "arguments": {...}}}: the model calls a tool (an MCP
  tool is named by its server's namespace, `mcp__<server>`, and its own name, as Codex sends
  them);
- {"echo": PREFIX}: text saying what the last user message was and which user messages came
  before it in the request (what a resumed session carries);
- {"hold": true}: no answer at all: the stream stays open, silent, until the client goes away;
- {"error": CODE}: an HTTP error with an OpenAI-style error body;
- {"limit": {"status", "headers", "error": {...}}}: a limit (429 unless said), its error body's
  fields given (a ChatGPT plan's `{"type": "usage_limit_reached", "resets_at": EPOCH}`), else the
  API's `rate_limit_exceeded` (fake_common.py).
Once the script is used up, every further request answers "done". Every request (path, headers
and body) is appended to REQUESTS as one JSON line before it is answered. The chosen port is
written to PORT_FILE.
"""
import json
import time
import uuid

from fake_common import Handler, next_reply, serve, usage_of


def user_messages(body):
    """The person's messages in a request, oldest first (Codex's own context blocks left out)."""
    out = []
    for item in body.get("input") or []:
        if item.get("type") == "message" and item.get("role") == "user":
            for part in item.get("content") or []:
                text = part.get("text", "")
                if part.get("type") == "input_text" and not text.lstrip().startswith("<"):
                    out.append(text)
    return out


def output_item(reply, body):
    if "call" in reply:
        c = reply["call"]
        item = {"type": "function_call", "id": "fc_" + uuid.uuid4().hex[:16], "call_id": "call_" + uuid.uuid4().hex[:16],
                "name": c["name"], "arguments": json.dumps(c.get("arguments", {})), "status": "completed"}
        if c.get("namespace"):
            item["namespace"] = c["namespace"]
        return item
    if "echo" in reply:
        said = user_messages(body)
        text = "%s you said %r. Earlier user messages: %r" % (reply["echo"], said[-1] if said else "", said[:-1])
    else:
        text = reply["text"]
    return {"type": "message", "id": "msg_" + uuid.uuid4().hex[:16], "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


class OpenAIHandler(Handler):
    record_headers = True

    def do_GET(self):
        self.send_json(200, {"object": "list", "data": []})

    def do_POST(self):
        body = self.read_request()
        if not self.path.rstrip("/").endswith("/responses"):
            return self.send_json(404, {"error": {"message": "not served by the stand-in", "type": "invalid_request_error"}})
        reply = next_reply()
        if "limit" in reply:
            limit = reply["limit"]
            error = {"message": "Rate limit reached for requests", "type": "requests", "param": None, "code": "rate_limit_exceeded"}
            error.update(limit.get("error") or {})
            return self.send_limit(limit, {"error": error})
        if "error" in reply:
            code = int(reply["error"])
            return self.send_json(code, {"error": {"message": "stand-in: injected HTTP %d" % code,
                                                   "type": "invalid_request_error" if code < 500 else "server_error",
                                                   "param": None, "code": None}})
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        resp_id = "resp_" + uuid.uuid4().hex[:16]
        model = body.get("model", "stand-in")
        base = {"id": resp_id, "object": "response", "created_at": int(time.time()), "model": model, "status": "in_progress",
                "output": []}

        def send(obj):
            self.wfile.write(("event: %s\ndata: %s\n\n" % (obj["type"], json.dumps(obj))).encode())
            self.wfile.flush()

        send({"type": "response.created", "response": base})
        if reply.get("hold"):
            # Silent until the client hangs up (or the stand-in is stopped).
            while True:
                time.sleep(0.2)
                try:
                    self.wfile.write(b": waiting\n\n")
                    self.wfile.flush()
                except OSError:
                    return
        item = output_item(reply, body)
        send({"type": "response.output_item.added", "output_index": 0, "item": dict(item, status="in_progress")})
        if item["type"] == "message":
            text = item["content"][0]["text"]
            for piece in (text[: len(text) // 2], text[len(text) // 2:]):
                send({"type": "response.output_text.delta", "item_id": item["id"], "output_index": 0, "content_index": 0,
                      "delta": piece})
        send({"type": "response.output_item.done", "output_index": 0, "item": item})
        u = usage_of(reply)
        # The Responses API counts cached input in input_tokens.
        usage = {"input_tokens": u["input"] + u["cached"], "input_tokens_details": {"cached_tokens": u["cached"]},
                 "output_tokens": u["output"], "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": u["input"] + u["cached"] + u["output"]}
        send({"type": "response.completed", "response": dict(base, status="completed", output=[item], usage=usage)})


serve(OpenAIHandler)
