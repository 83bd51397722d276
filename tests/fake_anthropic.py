"""A local stand-in for the Anthropic Messages API, so that the real Claude Code CLI can run a
scripted conversation without a network or a key.

Usage: fake_anthropic.py SCRIPT.json REQUESTS.jsonl PORT_FILE (the command line, the recording of
requests and the serving are `fake_common.py`'s)

SCRIPT is a list of replies, one per model request that offers tools (the agent's turns), in
order: {"tool_use": {"name": ..., "input": {...}}} or {"text": ...}, either with "sleep": SECONDS to
answer only after that long (a turn in progress, to cancel); or {"limit": {...}}: a 429 with the
API's `rate_limit_error` body (fake_common.py). Once the script is used up,
every further turn answers "done". Every request body is appended to REQUESTS as one JSON line
(so a test can see which tools the agent was offered). The chosen port is written to PORT_FILE.
Streaming (server-sent events) and plain JSON replies are both served, as the API does.
"""
import json
import time
import uuid

from fake_common import usage_of, Handler, reply_for, serve


def content_blocks(reply):
    if "tool_use" in reply:
        t = reply["tool_use"]
        return [{"type": "tool_use", "id": "toolu_" + uuid.uuid4().hex[:24], "name": t["name"], "input": t["input"]}], "tool_use"
    return [{"type": "text", "text": reply["text"]}], "end_turn"


class AnthropicHandler(Handler):
    def do_GET(self):
        self.send_json(200, {"data": [], "has_more": False})

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):
        body = self.read_request()
        if "count_tokens" in self.path:
            return self.send_json(200, {"input_tokens": 10})
        if not self.path.startswith("/v1/messages"):
            return self.send_json(200, {})
        reply = reply_for(body)
        if "limit" in reply:
            limit = reply["limit"]
            return self.send_limit(limit, {"type": "error", "error": {
                "type": "rate_limit_error", "message": limit.get("message", "This request would exceed your rate limit.")}})
        if reply.get("sleep"):
            time.sleep(reply["sleep"])
        blocks, stop = content_blocks(reply)
        model = body.get("model", "claude-stand-in")
        msg_id = "msg_" + uuid.uuid4().hex[:24]
        u = usage_of(reply)
        usage = {"input_tokens": u["input"], "output_tokens": u["output"], "cache_creation_input_tokens": 0,
                 "cache_read_input_tokens": u["cached"]}
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
        events.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": u["output"]}}))
        events.append(("message_stop", {"type": "message_stop"}))
        self.send_events("".join(f"event: {name}\ndata: {json.dumps(obj)}\n\n" for name, obj in events).encode())


serve(AnthropicHandler)
