"""set_permission_mode between turns changes what runs without asking."""
import anyio
from claude_agent_sdk import ClaudeSDKClient

from common import message, options, report


async def main():
    async with ClaudeSDKClient(options()) as client:
        await client.query("Create a.txt")
        async for m in client.receive_response():
            message(m)
        await client.set_permission_mode("acceptEdits")
        report("mode_set")
        await client.query("Create b.txt")
        async for m in client.receive_response():
            message(m)


anyio.run(main)
