"""allowed_tools lets exactly the allowed command run."""
import anyio
from claude_agent_sdk import query

from common import message, options


async def main():
    opts = options(allowed_tools=["Bash(touch:*)"])
    async for m in query(prompt="Make a file, then clean up", options=opts):
        message(m)


anyio.run(main)
