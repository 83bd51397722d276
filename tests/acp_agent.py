"""A scripted stand-in for an Agent Client Protocol agent: plays the agent's side of a captured
exchange (tests/fixtures/<agent>/*.jsonl, recorded from the real agent) to a client on stdio.

Usage: acp_agent.py FIXTURE.jsonl RECORD.jsonl [PIDS_FILE]
Switches (environment): PAUSE_AT_PERMISSION=1 (the turn hangs at its first permission
request), NOISE_FIRST=1 (a non-UTF-8 line and a line over 16 MiB before anything).

Each message the client sends is matched to the next captured client message of the same
method (and, for session/load and session/prompt, the same sessionId), skipping ahead; then the
agent's captured messages up to the next client message are sent, their response ids rewritten
to the client's own. A prompt the capture does not have is answered at once (end_turn). Everything the client sends is appended to RECORD as one JSON line, so a
test sees its requests and its answers to permission requests. Like the real agents, it does
not exit when its stdin closes: it (and a child of its process group, written to PIDS_FILE with
its own pid, like the native agent behind an npm wrapper) stays until it is killed.
"""
import json
import os
import subprocess
import sys
import time

fixture, record = sys.argv[1], sys.argv[2]
if len(sys.argv) > 3:
    # A second process in the group, as the native agent is behind its npm wrapper.
    child = subprocess.Popen([sys.executable, "-c", "import time\nwhile True: time.sleep(1)"])
    with open(sys.argv[3], "w") as f:
        f.write(f"{os.getpid()} {child.pid}\n")

if os.environ.get("NOISE_FIRST"):
    # What an npm wrapper may print before the agent answers: Latin-1, then a line too long.
    sys.stdout.buffer.write(b"npm notice: caf\xe9\n")
    sys.stdout.buffer.write(b"x" * (16 * 1024 * 1024 + 1) + b"\n")
    sys.stdout.flush()

entries = [json.loads(line) for line in open(fixture) if line.strip()]
entries = [e for e in entries if e["dir"] in ("client->agent", "agent->client")]
pos = 0
ids = {}  # captured client request id -> the client's own


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def matches(captured, got):
    if captured.get("method") != got.get("method"):
        return False
    if got.get("method") in ("session/load", "session/prompt"):
        return captured["params"].get("sessionId") == got["params"].get("sessionId")
    return True


def play():
    """Send the agent's captured messages up to the next thing the client says."""
    global pos
    while pos < len(entries) and entries[pos]["dir"] == "agent->client":
        msg = dict(entries[pos]["msg"])
        pos += 1
        if "method" not in msg:
            if msg.get("id") not in ids:
                continue
            msg["id"] = ids[msg["id"]]
        if msg.get("method") == "session/request_permission" and os.environ.get("PAUSE_AT_PERMISSION"):
            pos = len(entries)  # a turn stuck on the model: only a cancel ends it
            return
        send(msg)
        if msg.get("method") == "session/request_permission":
            return  # the client's answer comes next in the script


for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    got = json.loads(line)
    with open(record, "a") as f:
        f.write(json.dumps(got) + "\n")
    if "method" not in got:
        # An answer to our request: the captured answer is the script's next entry.
        if pos < len(entries) and entries[pos]["dir"] == "client->agent" and "method" not in entries[pos]["msg"]:
            pos += 1
        play()
        continue
    if got["method"] == "session/cancel":
        if "prompt" in ids:
            send({"jsonrpc": "2.0", "id": ids["prompt"], "result": {"stopReason": "cancelled"}})
        continue
    i = pos
    while i < len(entries) and not (entries[i]["dir"] == "client->agent" and matches(entries[i]["msg"], got)):
        i += 1
    if i == len(entries):
        if got["method"] == "session/prompt":
            # A prompt the capture does not have: the agent has nothing more to say.
            send({"jsonrpc": "2.0", "id": got["id"], "result": {"stopReason": "end_turn"}})
        elif "id" in got:
            send({"jsonrpc": "2.0", "id": got["id"], "error": {"code": -32601, "message": "not in the script"}})
        continue
    if "id" in got:
        ids[entries[i]["msg"]["id"]] = got["id"]
        if got["method"] == "session/prompt":
            ids["prompt"] = got["id"]
    pos = i + 1
    play()

while True:
    time.sleep(1)
