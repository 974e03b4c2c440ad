"""SDK hooks: a PreToolUse hook denies a command; a Stop hook sends the model back once."""
import anyio
from claude_agent_sdk import ClaudeSDKClient, HookMatcher

from common import message, options, report

stops = []


async def pre_tool(hook_input, tool_use_id, context):
    report("pre_tool_use", input=hook_input, tool_use_id=tool_use_id)
    if "rm " in hook_input["tool_input"].get("command", ""):
        return {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": "No deleting in this repository.",
            }
        }
    return {}


async def stop(hook_input, tool_use_id, context):
    report("stop", input=hook_input)
    stops.append(hook_input)
    if len(stops) == 1:
        return {"decision": "block", "reason": "Also write the summary line."}
    return {}


async def main():
    opts = options(
        permission_mode="bypassPermissions",
        hooks={
            "PreToolUse": [HookMatcher(matcher="Bash", hooks=[pre_tool])],
            "Stop": [HookMatcher(hooks=[stop])],
        },
    )
    async with ClaudeSDKClient(opts) as client:
        await client.query("Clean up")
        async for m in client.receive_response():
            message(m)


anyio.run(main)
