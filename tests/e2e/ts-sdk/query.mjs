// The TypeScript Agent SDK drives keel: a one-shot query(), then a session with an in-process
// MCP tool and canUseTool. Every message is printed as one JSON line for the Rust test.
const { query, tool, createSdkMcpServer } = await import(process.env.TS_SDK_ENTRY);
const { z } = await import(process.env.TS_ZOD_ENTRY);

const report = (kind, fields) => console.log(JSON.stringify({ kind, ...fields }));

const base = {
  pathToClaudeCodeExecutable: process.env.KEEL_BIN,
  cwd: process.env.KEEL_WORK,
  env: { ...process.env },
};

for await (const m of query({ prompt: "Say hello", options: base })) {
  report("one_shot", { message: m });
}

const calls = [];
const calc = createSdkMcpServer({
  name: "calc",
  version: "2.0.0",
  tools: [
    tool("add", "Adds two integers", { a: z.number(), b: z.number() }, async (args) => {
      calls.push(args);
      return { content: [{ type: "text", text: `sum=${args.a + args.b}` }] };
    }),
  ],
});

async function* prompts() {
  yield { type: "user", message: { role: "user", content: "Add 2 and 3, then write a note" }, parent_tool_use_id: null };
}

const session = query({
  prompt: prompts(),
  options: {
    ...base,
    mcpServers: { calc },
    allowedTools: ["mcp__calc__add"],
    canUseTool: async (toolName, input) => {
      report("asked", { toolName, input });
      return { behavior: "deny", message: "No notes today." };
    },
  },
});
for await (const m of session) {
  report("session", { message: m });
  if (m.type === "result") {
    report("status", { value: await session.mcpServerStatus() });
    break;
  }
}
report("calls", { value: calls });
