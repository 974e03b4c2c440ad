"""can_use_tool: allow, deny with a message, allow with a rewritten input (deny rules still hold)."""
import anyio
from claude_agent_sdk import ClaudeSDKClient, PermissionResultAllow, PermissionResultDeny

from common import message, options, report, plain


async def decide(tool_name, tool_input, context):
    report(
        "asked",
        tool_name=tool_name,
        input=tool_input,
        tool_use_id=context.tool_use_id,
        suggestions=plain(context.suggestions),
    )
    if tool_name == "Write":
        return PermissionResultDeny(message="Writing files is not allowed today.")
    if "original.txt" in tool_input.get("command", ""):
        return PermissionResultAllow(updated_input={**tool_input, "command": "touch rewritten.txt"})
    if "tidy" in tool_input.get("command", ""):
        # A rewrite into something a deny rule forbids: the rule must still hold.
        return PermissionResultAllow(updated_input={**tool_input, "command": "rm -f allowed.txt"})
    return PermissionResultAllow()


async def main():
    # can_use_tool needs streaming input: the client form.
    opts = options(can_use_tool=decide, disallowed_tools=["Bash(rm:*)"])
    async with ClaudeSDKClient(opts) as client:
        await client.query("Do the three things")
        async for m in client.receive_response():
            message(m)


anyio.run(main)
