"""can_use_tool approves once and sends permission updates: a deny rule saved to the user's
settings, an allow rule saved to the project's local settings, a directory for the session."""
import os

import anyio
from claude_agent_sdk.types import PermissionRuleValue
from claude_agent_sdk import (
    ClaudeSDKClient,
    PermissionResultAllow,
    PermissionUpdate,
)

from common import message, options, report

EXTRA = os.environ["EXTRA_DIR"]


async def decide(tool_name, tool_input, context):
    report("asked", tool_name=tool_name, input=tool_input)
    return PermissionResultAllow(
        updated_permissions=[
            PermissionUpdate(
                type="addRules",
                rules=[PermissionRuleValue(tool_name="Bash", rule_content="touch two.txt")],
                behavior="deny",
                destination="userSettings",
            ),
            PermissionUpdate(
                type="addRules",
                rules=[PermissionRuleValue(tool_name="Bash", rule_content="touch three.txt")],
                behavior="allow",
                destination="localSettings",
            ),
            PermissionUpdate(type="addDirectories", directories=[EXTRA], destination="session"),
        ]
    )


async def main():
    async with ClaudeSDKClient(options(can_use_tool=decide)) as client:
        await client.query("Make the files")
        async for m in client.receive_response():
            message(m)


anyio.run(main)
