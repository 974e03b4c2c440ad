"""output_format json_schema: the answer arrives as structured_output."""
import anyio
from claude_agent_sdk import query

from common import message, options

SCHEMA = {
    "type": "object",
    "properties": {"files": {"type": "integer"}, "language": {"type": "string"}},
    "required": ["files", "language"],
}


async def main():
    opts = options(output_format={"type": "json_schema", "schema": SCHEMA})
    async for m in query(prompt="Describe the project", options=opts):
        message(m)


anyio.run(main)
