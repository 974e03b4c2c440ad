"""The same Write under the default mode (nobody approves: denied) and bypassPermissions."""
import anyio
from claude_agent_sdk import query

from common import message, options, report


async def main():
    for mode in ["default", "bypassPermissions"]:
        async for m in query(prompt="Create note.txt", options=options(permission_mode=mode)):
            message(m)
        report("mode_done", mode=mode)


anyio.run(main)
