"""A main agent's view: `guild-hall mcp --manager` driven by the official Python MCP SDK.

Usage: mcp_manager_client.py GUILD_HALL_BIN PROJECT HOME
Prints one JSON object with what it saw.
"""
import asyncio
import json
import sys
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def is_error(r):
    return bool(getattr(r, "is_error", getattr(r, "isError", False)))


async def call(session, name, args):
    try:
        r = await session.call_tool(name, args)
    except Exception as e:  # a JSON-RPC error response: its code says which kind
        err = getattr(e, "error", None)
        return {"error": str(e), "code": getattr(err, "code", None)}
    text = "".join(c.text for c in r.content if hasattr(c, "text"))
    if is_error(r):
        return {"error": text, "tool_error": True}
    return json.loads(text)


async def poll(session, job, want, seconds=60):
    deadline = time.time() + seconds
    while time.time() < deadline:
        s = await call(session, "status", {"jobId": job})
        if s.get("status") in want:
            return s
        await asyncio.sleep(0.2)
    return s


async def delete(session, job, seconds=60):
    """Delete `job`, retrying while it is refused as still winding down: its own cleanup, or a
    reconciler at work on the project (the other job's cancel starts one), is a retryable refusal."""
    deadline = time.time() + seconds
    while True:
        r = await call(session, "delete", {"jobId": job})
        if "error" not in r or "winding down" not in r["error"] or time.time() > deadline:
            return r
        await asyncio.sleep(0.1)


async def main(binary, project, home):
    params = StdioServerParameters(command=binary, args=["-C", project, "--home", home, "mcp", "--manager"])
    out = {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            out["instructions"] = init.instructions
            info = getattr(init, "server_info", None) or getattr(init, "serverInfo", None)
            out["server"] = {"name": info.name, "version": info.version}
            out["tools"] = sorted(t.name for t in (await session.list_tools()).tools)
            d = await call(session, "dispatch", {"description": "Survey crash-only designs", "task": "Crash-only software\nSurvey it.", "config": {"worker": "scripted-researcher", "maxTurns": 9}})
            out["dispatch"] = d
            job = d["jobId"]
            out["final"] = await poll(session, job, ("completed", "failed", "cancelled"))
            out["result"] = await call(session, "result", {"jobId": job})
            out["usage"] = await call(session, "usage", {"by": "worker"})
            out["usage_bad"] = await call(session, "usage", {"by": "team"})
            out["list_simple"] = await call(session, "list", {})
            out["list_filtered"] = await call(session, "list", {"detail": "detailed", "filter": "*crash-only*"})
            out["list_none"] = await call(session, "list", {"filter": "*nothing like it*"})
            out["cancel_completed"] = await call(session, "cancel", {"jobId": job})
            out["redispatch_completed"] = await call(session, "redispatch", {"jobId": job})
            # A long job: running, refused delete, cancel, then deleted.
            slow = (await call(session, "dispatch", {"description": "Slow one", "task": "sleep: 300\nTake your time.", "config": {"worker": "sleeper"}}))["jobId"]
            out["slow_running"] = await poll(session, slow, ("running",))
            out["result_running"] = await call(session, "result", {"jobId": slow})
            out["delete_running"] = await call(session, "delete", {"jobId": slow})
            out["cancel_slow"] = await call(session, "cancel", {"jobId": slow})
            out["status_after_cancel"] = await call(session, "status", {"jobId": slow})
            out["slow_final"] = await poll(session, slow, ("cancelled",))
            out["cancel_again"] = await call(session, "cancel", {"jobId": slow})
            out["delete_slow"] = await delete(session, slow)
            out["delete_done"] = await delete(session, job)
            out["status_unknown"] = await call(session, "status", {"jobId": job})
            out["status_traversal"] = await call(session, "status", {"jobId": "../../etc/passwd"})
            out["dispatch_bad"] = await call(session, "dispatch", {"description": "x", "task": "y", "config": {"worker": "nobody"}})
            out["dispatch_types"] = await call(session, "dispatch", {"description": "x", "task": "y", "config": {"worker": "scripted-researcher", "maxTurns": "lots"}})
            out["dispatch_unknown_key"] = await call(session, "dispatch", {"description": "x", "task": "y", "max_turns": 3})
            out["dispatch_unknown_config"] = await call(session, "dispatch", {"description": "x", "task": "y", "config": {"worker": "scripted-researcher", "max_turns": 3}})
            out["status_wrong_type"] = await call(session, "status", {"jobId": 42})
            out["meeting_request"] = await call(session, "meeting_request", {"worker": "counsel", "reason": "The survey needs a decision", "references": [".lore/reports/x.md"]})
            out["meeting_request_bad"] = await call(session, "meeting_request", {"worker": "scripted-researcher", "reason": "x"})
            out["job"], out["slow"] = job, slow
    print(json.dumps(out))


asyncio.run(main(*sys.argv[1:4]))
