"""A turn that reads, edits and runs a command (acceptEdits)."""
import anyio
from claude_agent_sdk import query

from common import message, options


async def main():
    opts = options(permission_mode="acceptEdits")
    async for m in query(prompt="Fix the greeting in greet.txt and show it", options=opts):
        message(m)


anyio.run(main)
