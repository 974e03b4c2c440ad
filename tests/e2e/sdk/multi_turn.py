"""ClaudeSDKClient: two prompts in one session."""
import anyio
from claude_agent_sdk import ClaudeSDKClient

from common import message, options, report


async def main():
    async with ClaudeSDKClient(options()) as client:
        for prompt in ["My name is Ada.", "What is my name?"]:
            await client.query(prompt)
            async for m in client.receive_response():
                message(m)
            report("turn_done", prompt=prompt)


anyio.run(main)
