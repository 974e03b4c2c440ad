"""interrupt() stops a running command; the session takes the next prompt."""
import anyio
from claude_agent_sdk import AssistantMessage, ClaudeSDKClient, ToolUseBlock

from common import message, options, report


async def main():
    async with ClaudeSDKClient(options(permission_mode="bypassPermissions")) as client:
        await client.query("Wait a long time")
        async for m in client.receive_response():
            message(m)
            if isinstance(m, AssistantMessage) and any(isinstance(b, ToolUseBlock) for b in m.content):
                # Give the command a moment to start, then interrupt it.
                await anyio.sleep(0.5)
                await client.interrupt()
                report("interrupted")
        await client.query("Are you there?")
        async for m in client.receive_response():
            message(m)


anyio.run(main)
