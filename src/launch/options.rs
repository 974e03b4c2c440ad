//! The run's options, lowered once from the command line at the edge (`cli::args`): plain
//! typed values that setup, headless mode and the TUI read; nothing below `cli/` sees the
//! argument parser.

use std::path::PathBuf;

/// Whether `KEEL_SAFE_MODE` or the reference's `CLAUDE_CODE_SAFE_MODE` asks for safe mode.
pub fn safe_mode_env() -> bool {
    ["KEEL_SAFE_MODE", "CLAUDE_CODE_SAFE_MODE"]
        .iter()
        .any(|k| std::env::var(k).is_ok_and(|v| matches!(v.trim(), "1" | "true" | "yes")))
}

/// What safe mode leaves out, as said at the start of such a session.
pub const SAFE_MODE_NOTICE: &str = "safe mode: this session runs without instruction files (CLAUDE.md, AGENTS.md, \
rules), plugins, skills and commands, custom agent types, project memory, hooks (managed ones excepted) and MCP \
servers; settings' permission rules and model choice still apply";

/// What a run was asked to do (a session's flags; subcommands stay in `cli/`).
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The prompt (headless with -p; the first message in interactive mode)
    pub prompt: Option<String>,

    /// Run headless: answer the prompt (argument and/or stdin) and exit
    pub print: bool,

    /// Output of headless mode
    pub output_format: OutputFormat,

    /// More output: needed for stream-json; prints retries and notices on stderr
    pub verbose: bool,

    /// With stream-json: also emit raw model stream events
    pub include_partial_messages: bool,

    /// Stop after this many model turns
    pub max_turns: Option<u32>,

    /// Model id or alias (sonnet, opus, haiku), or PROVIDER/MODEL for a provider named in the
    /// settings (ollama/qwen3-coder)
    pub model: Option<String>,

    /// Model to continue on when the main model is overloaded (also the fallbackModel setting)
    pub fallback_model: Option<String>,

    /// Replace keel's system prompt
    pub system_prompt: Option<String>,

    /// Append text to the system prompt
    pub append_system_prompt: Option<String>,

    /// Permission mode: default, acceptEdits, plan, dontAsk, bypassPermissions
    pub permission_mode: Option<String>,

    /// Same as --permission-mode bypassPermissions
    pub dangerously_skip_permissions: bool,

    /// Offer bypassPermissions among the modes to switch to (Shift+Tab) without starting in it
    pub allow_dangerously_skip_permissions: bool,

    /// Headless: the project's settings may set the mode up to acceptEdits (`--trust-project`,
    /// `KEEL_TRUST_PROJECT=1`).
    pub trust_project: bool,

    /// Continue the most recent session in this directory
    pub continue_session: bool,

    /// Resume a session by id (without an id: choose one, in interactive mode)
    pub resume: Option<String>,

    /// Use this id for a new session
    pub session_id: Option<String>,

    /// Do not write a transcript
    pub no_session_persistence: bool,

    /// Allow rules, e.g. "Bash(git log:*)" Read (space- or comma-separated)
    pub allowed_tools: Vec<String>,

    /// Deny rules; a bare tool name removes the tool from the model's view
    pub disallowed_tools: Vec<String>,

    /// Restrict the built-in tools: a list of names, "" for none, "default" for all
    pub tools: Option<String>,

    /// Extra settings: a JSON file or inline JSON (highest precedence)
    pub settings: Option<String>,

    /// MCP servers: a JSON file or inline JSON with `mcpServers` (repeatable)
    pub mcp_config: Vec<String>,

    /// Use only the MCP servers given with --mcp-config
    pub strict_mcp_config: bool,

    /// More working directories the tools may use
    pub add_dir: Vec<PathBuf>,

    /// Load a plugin folder (skills, commands, agents, hooks); repeat for more
    pub plugin_dir: Vec<PathBuf>,

    /// `--safe-mode` (or `KEEL_SAFE_MODE` / `CLAUDE_CODE_SAFE_MODE`): no instruction files,
    /// rules, plugins, skills, custom agents, memory, hooks (but managed ones) or MCP servers.
    pub safe_mode: bool,

    /// Sub-agent types as JSON: {"name": {"description": "...", "prompt": "...", "tools": [...]}}
    pub agents: Option<String>,

    /// Run Bash commands in the OS sandbox (writes limited to the working directories, no network)
    pub sandbox: bool,

    /// Where model turns come from (default anthropic, or the provider the model names)
    pub provider: Option<ProviderKind>,

    /// Script of assistant turns for --provider script
    pub script: Option<PathBuf>,

    pub programs: ProgramOptions,
}

/// The flags programs that drive keel pass.
#[derive(Debug, Clone, Default)]
pub struct ProgramOptions {
    /// Input of headless mode: `text` (the prompt), or `stream-json` (NDJSON user messages and
    /// control requests on stdin, one turn per message, until stdin closes)
    pub input_format: InputFormat,

    /// With stream-json: also print hook runs (`hook_started`, `hook_response`)
    pub include_hook_events: bool,

    /// With stream-json input and output: echo each user message back
    pub replay_user_messages: bool,

    /// Who answers permission questions headless: `stdio` (the driving program, over the
    /// control protocol)
    pub permission_prompt_tool: Option<String>,

    /// Replace keel's system prompt with the content of a file
    pub system_prompt_file: Option<PathBuf>,

    /// Append the content of a file to the system prompt
    pub append_system_prompt_file: Option<PathBuf>,

    /// Which settings files to read: a comma-separated list of user, project, local
    pub setting_sources: Option<String>,

    /// With --resume or --continue: continue in a new session (the old one stays as it was)
    pub fork_session: bool,

    /// Stop once the session has cost this many US dollars
    pub max_budget_usd: Option<f64>,
    /// `--task-budget`: tokens per run.
    pub task_budget: Option<u64>,

    /// With a prompt argument: wait for stdin to end without a time limit
    pub wait_for_stdin: bool,

    /// Require the final answer as JSON matching this schema (result in `structured_output`)
    pub json_schema: Option<String>,

    /// Extended thinking budget in tokens (0 turns thinking off)
    pub max_thinking_tokens: Option<u32>,

    /// Thinking: `enabled`, `adaptive` or `disabled`
    pub thinking: Option<String>,

    /// Reasoning effort: low, medium, high, xhigh or max
    pub effort: Option<String>,

    /// Flags of the reference keel does not implement; each is refused with a clear message.
    pub unsupported: Unsupported,
}

/// The first reference flag keel accepts but does not implement, if one was given.
#[derive(Debug, Clone, Copy, Default)]
pub struct Unsupported(pub Option<&'static str>);

impl Unsupported {
    pub fn first(&self) -> Option<&'static str> {
        self.0
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InputFormat {
    #[default]
    Text,
    StreamJson,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputFormat {
    #[default]
    Text,
    Json,
    StreamJson,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    Anthropic,
    OpenAi,
    OpenAiResponses,
    Script,
}
