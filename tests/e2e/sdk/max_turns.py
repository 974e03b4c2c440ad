"""max_turns ends a run that would go on."""
import anyio
from claude_agent_sdk import ResultError, query

from common import message, options, report


async def main():
    try:
        async for m in query(prompt="Look around", options=options(max_turns=1)):
            message(m)
    except ResultError as e:
        # keel exits 1 after an error result, as the reference does; the SDK raises it.
        report("raised", error=str(e))


anyio.run(main)
