//! Command-line arguments, named as the reference names them so scripts carry over.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

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

    /// Model to continue on when the main model is overloaded (also the fallbackModel setting)
    #[arg(long, value_name = "MODEL")]
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

    /// Continue the most recent session in this directory
    #[arg(short = 'c', long = "continue")]
    pub continue_session: bool,

    /// Resume a session by id
    #[arg(short = 'r', long)]
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

    /// More working directories the tools may use
    #[arg(long = "add-dir", num_args = 1.., value_name = "DIR")]
    pub add_dir: Vec<PathBuf>,

    /// Run Bash commands in the OS sandbox (writes limited to the working directories, no network)
    #[arg(long)]
    pub sandbox: bool,

    /// Diagnostics on stderr
    #[arg(long)]
    pub debug: bool,

    /// Where model turns come from (default anthropic, or the provider the model names)
    #[arg(long, value_enum)]
    pub provider: Option<ProviderKind>,

    /// Script of assistant turns for --provider script
    #[arg(long)]
    pub script: Option<PathBuf>,
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
}
