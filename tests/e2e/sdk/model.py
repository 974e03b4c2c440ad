"""The model option, then set_model for the next turn."""
import anyio
from claude_agent_sdk import ClaudeSDKClient

from common import message, options


async def main():
    async with ClaudeSDKClient(options(model="opus")) as client:
        await client.query("first")
        async for m in client.receive_response():
            message(m)
        await client.set_model("haiku")
        await client.query("second")
        async for m in client.receive_response():
            message(m)


anyio.run(main)
