"""query(): one prompt, every message reported."""
import anyio
from claude_agent_sdk import query

from common import message, options


async def main():
    async for m in query(prompt="Say hello", options=options()):
        message(m)


anyio.run(main)
