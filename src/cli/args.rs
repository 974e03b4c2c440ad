//! Command-line arguments, named as the reference names them so scripts carry over.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

use crate::launch::options::{self, Options, ProgramOptions, Unsupported};

#[derive(Debug, Parser)]
#[command(
    name = "keel",
    args_conflicts_with_subcommands = true,
    version,
    about = "A terminal coding agent that keeps the model's claims tied to evidence"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    /// The prompt (headless with -p; the first message in interactive mode)
    pub prompt: Option<String>,

    /// Run headless: answer the prompt (argument and/or stdin) and exit
    #[arg(short = 'p', long = "print")]
    pub print: bool,

    /// Output of headless mode
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub output_format: OutputFormat,

    /// More output: needed for stream-json; prints retries and notices on stderr
    #[arg(long)]
    pub verbose: bool,

    /// With stream-json: also emit raw model stream events
    #[arg(long)]
    pub include_partial_messages: bool,

    /// Stop after this many model turns
    #[arg(long)]
    pub max_turns: Option<u32>,

    /// Model id or alias (sonnet, opus, haiku), or PROVIDER/MODEL for a provider named in the
    /// settings (ollama/qwen3-coder)
    #[arg(long)]
    pub model: Option<String>,

    /// Models to continue on when the model in use is overloaded, or to retry a request on once
    /// after an unexpected server error: up to three, comma-separated (also the fallbackModel setting)
    #[arg(long, value_name = "MODEL[,MODEL...]")]
    pub fallback_model: Option<String>,

    /// Replace keel's system prompt
    #[arg(long)]
    pub system_prompt: Option<String>,

    /// Append text to the system prompt
    #[arg(long)]
    pub append_system_prompt: Option<String>,

    /// Permission mode: default, acceptEdits, plan, dontAsk, bypassPermissions
    #[arg(long)]
    pub permission_mode: Option<String>,

    /// Same as --permission-mode bypassPermissions
    #[arg(long)]
    pub dangerously_skip_permissions: bool,

    /// Offer bypassPermissions among the modes to switch to (Shift+Tab) without starting in it
    #[arg(long)]
    pub allow_dangerously_skip_permissions: bool,

    /// Headless: let the project's own settings set the permission mode up to acceptEdits (for
    /// CI running in a checkout it trusts; also KEEL_TRUST_PROJECT=1)
    #[arg(long)]
    pub trust_project: bool,

    /// Continue the most recent session in this directory
    #[arg(short = 'c', long = "continue")]
    pub continue_session: bool,

    /// Resume a session by id (without an id: choose one, in interactive mode)
    #[arg(short = 'r', long, num_args = 0..=1, default_missing_value = "")]
    pub resume: Option<String>,

    /// Use this id for a new session
    #[arg(long)]
    pub session_id: Option<String>,

    /// Do not write a transcript
    #[arg(long)]
    pub no_session_persistence: bool,

    /// Allow rules, e.g. "Bash(git log:*)" Read (space- or comma-separated)
    #[arg(long = "allowedTools", visible_alias = "allowed-tools", num_args = 1.., value_name = "RULES")]
    pub allowed_tools: Vec<String>,

    /// Deny rules; a bare tool name removes the tool from the model's view
    #[arg(long = "disallowedTools", visible_alias = "disallowed-tools", num_args = 1.., value_name = "RULES")]
    pub disallowed_tools: Vec<String>,

    /// Restrict the built-in tools: a list of names, "" for none, "default" for all
    #[arg(long, value_name = "TOOLS")]
    pub tools: Option<String>,

    /// Extra settings: a JSON file or inline JSON (highest precedence)
    #[arg(long, value_name = "FILE|JSON")]
    pub settings: Option<String>,

    /// MCP servers: a JSON file or inline JSON with `mcpServers` (repeatable)
    #[arg(long = "mcp-config", num_args = 1.., value_name = "FILE|JSON")]
    pub mcp_config: Vec<String>,

    /// Use only the MCP servers given with --mcp-config
    #[arg(long)]
    pub strict_mcp_config: bool,

    /// More working directories the tools may use
    #[arg(long = "add-dir", num_args = 1.., value_name = "DIR")]
    pub add_dir: Vec<PathBuf>,

    /// Load a plugin folder (skills, commands, agents, hooks); repeat for more
    #[arg(long = "plugin-dir", value_name = "DIR")]
    pub plugin_dir: Vec<PathBuf>,

    /// Sub-agent types as JSON: {"name": {"description": "...", "prompt": "...", "tools": [...]}}
    #[arg(long, value_name = "JSON")]
    pub agents: Option<String>,

    /// Run Bash commands in the OS sandbox (writes limited to the working directories, no network)
    #[arg(long)]
    pub sandbox: bool,

    /// Diagnostics: spans and events into the session's debug.log (headless: also on stderr).
    /// FILTER: a level, keel module names or target=level, e.g. --debug=provider,hooks
    #[arg(long, value_name = "FILTER", num_args = 0..=1, require_equals = true, default_missing_value = "")]
    pub debug: Option<String>,

    /// Where model turns come from (default anthropic, or the provider the model names)
    #[arg(long, value_enum)]
    pub provider: Option<ProviderKind>,

    /// Script of assistant turns for --provider script
    #[arg(long)]
    pub script: Option<PathBuf>,

    #[command(flatten)]
    pub programs: ProgramArgs,
}

/// Flags of programs that drive keel (the Agent SDKs, CI actions, scripts).
#[derive(Debug, Default, clap::Args)]
pub struct ProgramArgs {
    /// Input of headless mode: `text` (the prompt), or `stream-json` (NDJSON user messages and
    /// control requests on stdin, one turn per message, until stdin closes)
    #[arg(long, value_enum, default_value_t = InputFormat::Text)]
    pub input_format: InputFormat,

    /// With stream-json: also print hook runs (`hook_started`, `hook_response`)
    #[arg(long)]
    pub include_hook_events: bool,

    /// With stream-json input and output: echo each user message back
    #[arg(long)]
    pub replay_user_messages: bool,

    /// Who answers permission questions headless: `stdio` (the driving program, over the
    /// control protocol)
    #[arg(long, value_name = "TOOL")]
    pub permission_prompt_tool: Option<String>,

    /// Replace keel's system prompt with the content of a file
    #[arg(long, value_name = "FILE", conflicts_with = "system_prompt")]
    pub system_prompt_file: Option<PathBuf>,

    /// Append the content of a file to the system prompt
    #[arg(long, value_name = "FILE", conflicts_with = "append_system_prompt")]
    pub append_system_prompt_file: Option<PathBuf>,

    /// Which settings files to read: a comma-separated list of user, project, local
    #[arg(long, value_name = "SOURCES")]
    pub setting_sources: Option<String>,

    /// With --resume or --continue: continue in a new session (the old one stays as it was)
    #[arg(long)]
    pub fork_session: bool,

    /// Stop once the session has cost this many US dollars
    #[arg(long, value_name = "USD")]
    pub max_budget_usd: Option<f64>,

    /// Token budget of each run (a prompt and the tool calls it sets off): the run stops with
    /// error_max_task_budget once it is spent; models whose API takes a task budget see it too
    #[arg(long, value_name = "TOKENS")]
    pub task_budget: Option<u64>,

    /// With a prompt argument: wait for stdin to end however long it takes (without it, keel
    /// goes on without stdin when nothing arrives there within 3 s)
    #[arg(long)]
    pub wait_for_stdin: bool,

    /// Require the final answer as JSON matching this schema (result in `structured_output`)
    #[arg(long, value_name = "SCHEMA")]
    pub json_schema: Option<String>,

    /// Extended thinking budget in tokens (0 turns thinking off)
    #[arg(long, value_name = "TOKENS")]
    pub max_thinking_tokens: Option<u32>,

    /// Thinking: `enabled`, `adaptive` or `disabled`
    #[arg(long, value_name = "MODE")]
    pub thinking: Option<String>,

    /// Reasoning effort: low, medium, high, xhigh or max
    #[arg(long, value_name = "LEVEL")]
    pub effort: Option<String>,

    /// A session without customisations, to tell the model's behaviour from the configuration's:
    /// no instruction files or rules, plugins, skills, custom agents, memory, hooks or MCP
    /// servers (also KEEL_SAFE_MODE=1 or CLAUDE_CODE_SAFE_MODE=1)
    #[arg(long)]
    pub safe_mode: bool,

    /// Flags of the reference keel does not implement; each is refused with a clear message.
    #[command(flatten)]
    pub unsupported: UnsupportedArgs,
}

/// Accepted by the parser only so that keel can name them in a one-line refusal, instead of a
/// generic usage error.
#[derive(Debug, Default, clap::Args)]
pub struct UnsupportedArgs {
    #[arg(long, hide = true, value_name = "BETAS")]
    pub betas: Option<String>,
    #[arg(long, hide = true)]
    pub resume_session_at: Option<String>,
    #[arg(long, hide = true)]
    pub resume_drops_turn: Option<String>,
    #[arg(long, hide = true)]
    pub session_mirror: bool,
    #[arg(long, hide = true)]
    pub thinking_display: Option<String>,
}

impl UnsupportedArgs {
    /// The first flag given that keel cannot honour.
    pub fn first(&self) -> Option<&'static str> {
        [
            (self.betas.is_some(), "--betas"),
            (self.resume_session_at.is_some(), "--resume-session-at"),
            (self.resume_drops_turn.is_some(), "--resume-drops-turn"),
            (self.session_mirror, "--session-mirror"),
            (self.thinking_display.is_some(), "--thinking-display"),
        ]
        .into_iter()
        .find_map(|(given, name)| given.then_some(name))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum InputFormat {
    #[default]
    Text,
    #[value(name = "stream-json")]
    StreamJson,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Text,
    Json,
    #[value(name = "stream-json")]
    StreamJson,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProviderKind {
    /// Anthropic Messages API (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL)
    Anthropic,
    /// OpenAI Chat Completions and compatible servers (OPENAI_BASE_URL, OPENAI_API_KEY)
    #[value(name = "openai")]
    OpenAi,
    /// OpenAI Responses API (OPENAI_BASE_URL, OPENAI_API_KEY)
    #[value(name = "openai-responses")]
    OpenAiResponses,
    /// Scripted turns from a file (--script)
    Script,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Report what this machine and configuration support (sandbox, settings, model access)
    Doctor {
        /// Do not contact the model servers
        #[arg(long)]
        offline: bool,
        /// Check this provider's endpoint and model (as `keel --provider` would use it)
        #[arg(long, value_enum)]
        provider: Option<ProviderKind>,
        /// Report this model's context window
        #[arg(long)]
        model: Option<String>,
    },
    /// List the configured hooks by event and source file
    Hooks,
    /// Show what keel puts in front of the conversation here: layers, instruction files, sizes
    Context,
    /// Configure MCP servers: list, get, add, add-json, remove
    #[command(subcommand)]
    Mcp(super::mcp::McpCommand),
    /// Plugins: `init NAME` scaffolds one in .claude/skills, where keel loads it
    #[command(subcommand)]
    Plugin(super::plugin::PluginCommand),
    /// Take back what keel did: list a session's points, or restore files and/or the
    /// conversation to the moment before one
    Rewind(RewindArgs),
    /// Write a session out for other tools (`--format atif`: an Agent Trajectory Interchange
    /// Format document, as Harbor reads them) on stdout
    Export(ExportArgs),
}

#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// The format to write
    #[arg(long, value_enum, default_value_t = ExportFormat::Atif)]
    pub format: ExportFormat,
    /// The session: its id (this directory's sessions first, then every project's), or the
    /// path of its .jsonl transcript
    #[arg(value_name = "SESSION")]
    pub session: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// Agent Trajectory Interchange Format (JSON): steps, tool calls and their results,
    /// sub-agents, tokens and cost, and keel's verification report in `extra`
    Atif,
}

#[derive(Debug, clap::Args)]
pub struct RewindArgs {
    /// List the points (user prompts, earlier rewinds) and how many files changed since each
    #[arg(long, conflicts_with = "to", required_unless_present = "to")]
    pub list: bool,
    /// Restore to the moment before point N
    #[arg(long, value_name = "N")]
    pub to: Option<u32>,
    /// What to restore
    #[arg(long, value_enum, default_value_t = RestoreArg::Both)]
    pub restore: RestoreArg,
    /// Show what would be restored without changing anything
    #[arg(long, requires = "to")]
    pub dry_run: bool,
    /// The session (default: the latest one in this directory)
    #[arg(short = 'r', long = "resume", value_name = "SESSION_ID")]
    pub session: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RestoreArg {
    Code,
    Conversation,
    Both,
}

impl Cli {
    /// The run's options: the session flags as plain values (subcommands are dispatched here).
    pub fn lower(&self) -> Options {
        Options {
            prompt: self.prompt.clone(),
            print: self.print,
            output_format: self.output_format.into(),
            verbose: self.verbose,
            include_partial_messages: self.include_partial_messages,
            max_turns: self.max_turns,
            model: self.model.clone(),
            fallback_model: self.fallback_model.clone(),
            system_prompt: self.system_prompt.clone(),
            append_system_prompt: self.append_system_prompt.clone(),
            permission_mode: self.permission_mode.clone(),
            dangerously_skip_permissions: self.dangerously_skip_permissions,
            allow_dangerously_skip_permissions: self.allow_dangerously_skip_permissions,
            trust_project: self.trust_project
                || std::env::var("KEEL_TRUST_PROJECT").is_ok_and(|v| matches!(v.as_str(), "1" | "true")),
            continue_session: self.continue_session,
            resume: self.resume.clone(),
            session_id: self.session_id.clone(),
            no_session_persistence: self.no_session_persistence,
            allowed_tools: self.allowed_tools.clone(),
            disallowed_tools: self.disallowed_tools.clone(),
            tools: self.tools.clone(),
            settings: self.settings.clone(),
            mcp_config: self.mcp_config.clone(),
            strict_mcp_config: self.strict_mcp_config,
            add_dir: self.add_dir.clone(),
            plugin_dir: self.plugin_dir.clone(),
            agents: self.agents.clone(),
            sandbox: self.sandbox,
            provider: self.provider.map(Into::into),
            script: self.script.clone(),
            programs: self.programs.lower(),
            safe_mode: self.programs.safe_mode || crate::launch::options::safe_mode_env(),
        }
    }
}

impl ProgramArgs {
    fn lower(&self) -> ProgramOptions {
        ProgramOptions {
            input_format: self.input_format.into(),
            include_hook_events: self.include_hook_events,
            replay_user_messages: self.replay_user_messages,
            permission_prompt_tool: self.permission_prompt_tool.clone(),
            system_prompt_file: self.system_prompt_file.clone(),
            append_system_prompt_file: self.append_system_prompt_file.clone(),
            setting_sources: self.setting_sources.clone(),
            fork_session: self.fork_session,
            max_budget_usd: self.max_budget_usd,
            task_budget: self.task_budget,
            wait_for_stdin: self.wait_for_stdin,
            json_schema: self.json_schema.clone(),
            max_thinking_tokens: self.max_thinking_tokens,
            thinking: self.thinking.clone(),
            effort: self.effort.clone(),
            unsupported: Unsupported(self.unsupported.first()),
        }
    }
}

impl From<InputFormat> for options::InputFormat {
    fn from(f: InputFormat) -> Self {
        match f {
            InputFormat::Text => options::InputFormat::Text,
            InputFormat::StreamJson => options::InputFormat::StreamJson,
        }
    }
}

impl From<OutputFormat> for options::OutputFormat {
    fn from(f: OutputFormat) -> Self {
        match f {
            OutputFormat::Text => options::OutputFormat::Text,
            OutputFormat::Json => options::OutputFormat::Json,
            OutputFormat::StreamJson => options::OutputFormat::StreamJson,
        }
    }
}

impl From<ProviderKind> for options::ProviderKind {
    fn from(p: ProviderKind) -> Self {
        match p {
            ProviderKind::Anthropic => options::ProviderKind::Anthropic,
            ProviderKind::OpenAi => options::ProviderKind::OpenAi,
            ProviderKind::OpenAiResponses => options::ProviderKind::OpenAiResponses,
            ProviderKind::Script => options::ProviderKind::Script,
        }
    }
}
