"""The fallback_model option: the SDK passes --fallback-model; an overloaded model hands over."""
import anyio
from claude_agent_sdk import query

from common import message, options


async def main():
    async for m in query(prompt="hi", options=options(model="sonnet", fallback_model="haiku")):
        message(m)


anyio.run(main)
