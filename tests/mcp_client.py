"""An independent MCP client (the official Python SDK) for the toolbox server.

Usage: mcp_client.py GUILD_HALL_BIN
Connects to `GUILD_HALL_BIN mcp` over stdio with the worker environment it was given, lists the
tools, calls each, and prints one JSON object: tool names, the results, and the errors.
"""
import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def is_error(r):
    # The SDK's 2.x field name, and the 1.x one.
    return bool(getattr(r, "is_error", getattr(r, "isError", False)))


async def main(binary):
    params = StdioServerParameters(command=binary, args=["mcp"], env=dict(os.environ))
    out = {"tools": [], "calls": {}, "errors": {}}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            out["instructions"] = init.instructions
            tools = await session.list_tools()
            out["tools"] = sorted(t.name for t in tools.tools)
            out["descriptions"] = {t.name: t.description for t in tools.tools}
            calls = [
                ("report_progress", {"text": "halfway"}),
                ("log_question", {"text": "which format?"}),
                ("record_decision", {"question": "q", "decision": "d", "reasoning": "r"}),
                ("store_memory", {"key": "style", "content": "prefer tables"}),
                ("write_artifact", {"path": ".lore/notes/mcp.md", "content": "written over MCP\n"}),
                ("read_artifact", {"path": ".lore/notes/mcp.md"}),
                ("report_usage", {"input_tokens": 1200, "output_tokens": 30, "cached_tokens": 500}),
                ("submit_result", {"summary": "done", "artifacts": ["report.md"]}),
            ]
            for name, args in calls:
                r = await session.call_tool(name, args)
                out["calls"][name] = {"is_error": is_error(r), "text": [c.text for c in r.content if hasattr(c, "text")]}
            bad = [
                ("submit_result", {"summary": "again"}),
                ("submit_result", {"summary": "x", "artifacts": ["../../etc/passwd"]}),
                ("store_memory", {"key": "../escape", "content": "x"}),
                ("report_progress", {"wrong": 1}),
                ("report_progress", {"text": 42}),
                ("write_artifact", {"path": "outside.md", "content": "x"}),
                ("write_artifact", {"path": ".lore/../../escape.md", "content": "x"}),
                ("read_artifact", {"path": ".lore/missing.md"}),
                ("report_usage", {"input_tokens": -1, "output_tokens": 1}),
                ("report_usage", {"input_tokens": 1, "output_tokens": 1, "usd": -0.5}),
            ]
            for i, (name, args) in enumerate(bad):
                try:
                    r = await session.call_tool(name, args)
                    out["errors"][f"{i}:{name}"] = {"is_error": is_error(r), "text": [c.text for c in r.content if hasattr(c, "text")]}
                except Exception as e:  # an MCP error response
                    out["errors"][f"{i}:{name}"] = {"is_error": True, "text": [str(e)]}
            # Still alive after all that.
            r = await session.call_tool("report_progress", {"text": "still here"})
            out["alive"] = not is_error(r)
    print(json.dumps(out))


asyncio.run(main(sys.argv[1]))
