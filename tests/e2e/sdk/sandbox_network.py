"""The sandbox option's network lists: the SDK passes them in --settings; keel's proxy lets the
sandboxed command reach the allowed host and refuses the one the deny list names."""
import anyio
from claude_agent_sdk import query

from common import message, options


async def main():
    sandbox = {
        "enabled": True,
        "network": {"allowedDomains": ["localhost", "*.localhost"], "deniedDomains": ["blocked.localhost"]},
    }
    opts = options(sandbox=sandbox, permission_mode="bypassPermissions")
    async for m in query(prompt="fetch", options=opts):
        message(m)


anyio.run(main)
