"""An in-process SDK MCP server: the model calls its tool, the tool runs in this process, the
result reaches the model; mcp_status lists the server."""
import os

import anyio
from claude_agent_sdk import ClaudeSDKClient, create_sdk_mcp_server, tool

from common import message, options, report

calls = []


@tool("add", "Adds two integers", {"a": int, "b": int})
async def add(args):
    calls.append(args)
    return {"content": [{"type": "text", "text": f"sum={args['a'] + args['b']} pid={os.getpid()}"}]}


@tool("fail", "Always fails", {})
async def fail(args):
    raise ValueError("the calculator is broken")


async def main():
    calc = create_sdk_mcp_server(name="calc", version="1.2.3", tools=[add, fail])
    opts = options(mcp_servers={"calc": calc}, allowed_tools=["mcp__calc__add", "mcp__calc__fail"])
    async with ClaudeSDKClient(opts) as client:
        await client.query("Add 2 and 3")
        async for m in client.receive_response():
            message(m)
        report("status", value=await client.get_mcp_status())
    report("calls", value=calls, pid=os.getpid())


anyio.run(main)
