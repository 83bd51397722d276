"""A local stand-in for the Gemini API (generativelanguage `v1beta`), so that the real Gemini CLI
can run a scripted conversation without a network or a key.

Usage: fake_gemini.py SCRIPT.json REQUESTS.jsonl PORT_FILE (the command line, the recording of
requests and the serving are `fake_common.py`'s)

SCRIPT is a list of replies, one per model request that offers tools (the agent's turns), in
order: {"call": {"name": ..., "args": {...}}} (a function call), {"text": ...} (streamed in a few
chunks), {"hold": SECONDS} (answer nothing for that long: a turn to cancel) or {"limit": {...}}
(a 429 with the API's `RESOURCE_EXHAUSTED` body: fake_common.py). Once the script is
used up, every further turn answers "done". Side requests (no tools: the CLI's session summary,
routing) get a short text. Every request is appended to REQUESTS as one JSON line, its path and
body, before it is answered (so a test sees what each turn sent, and that a held one arrived).
The chosen port is written to PORT_FILE. `streamGenerateContent?alt=sse` is answered with
server-sent events, `generateContent` with one JSON reply, as the API does.
"""
import json
import time

from fake_common import Handler, reply_for, serve, usage_of

MODEL = "gemini-2.5-flash"


def usage(u):
    """As the Gemini API says it (on every chunk of a stream, the same): the prompt's count
    includes the cached part."""
    meta = {"promptTokenCount": u["input"] + u["cached"], "candidatesTokenCount": u["output"],
            "totalTokenCount": u["input"] + u["cached"] + u["output"]}
    if u["cached"]:
        meta["cachedContentTokenCount"] = u["cached"]
    return meta


def chunks(reply, meta):
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
        out.append({"candidates": [cand], "usageMetadata": meta, "modelVersion": MODEL})
    return out


class GeminiHandler(Handler):
    def do_GET(self):
        self.send_json(200, {"models": []})

    def do_POST(self):
        body = self.read_request()
        if ":countTokens" in self.path:
            return self.send_json(200, {"totalTokens": 10})
        if ":streamGenerateContent" not in self.path and ":generateContent" not in self.path:
            return self.send_json(200, {})
        reply = reply_for(body)
        if "limit" in reply:
            limit = reply["limit"]
            return self.send_limit(limit, {"error": {
                "code": int(limit.get("status", 429)), "status": "RESOURCE_EXHAUSTED",
                "message": limit.get("message", "Quota exceeded for quota metric 'Generate Content API requests per minute'")}})
        if "hold" in reply:
            time.sleep(float(reply["hold"]))
            reply = {"text": "held"}
        meta = usage(usage_of(reply))
        parts = chunks(reply, meta)
        if ":streamGenerateContent" not in self.path:
            merged = [p for c in parts for p in c["candidates"][0]["content"]["parts"]]
            return self.send_json(200, {"candidates": [{"content": {"role": "model", "parts": merged},
                                                        "finishReason": "STOP", "index": 0}],
                                        "usageMetadata": meta, "modelVersion": MODEL})
        self.send_events("".join(f"data: {json.dumps(c)}\r\n\r\n" for c in parts).encode())


serve(GeminiHandler)
