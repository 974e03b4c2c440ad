"""Programmatic agents: a sub-agent type defined in the options, used by the Agent tool."""
import anyio
from claude_agent_sdk import AgentDefinition, query

from common import message, options


async def main():
    opts = options(
        permission_mode="bypassPermissions",
        agents={
            "reviewer": AgentDefinition(
                description="Reviews a change and reports problems.",
                prompt="You are the code reviewer. Report problems plainly.",
                tools=["Read", "Grep"],
            )
        },
    )
    async for m in query(prompt="Have the change reviewed", options=opts):
        message(m)


anyio.run(main)
