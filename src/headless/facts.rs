//! Facts about the session that `system/init` reports beyond its inventory: what the control
//! protocol offers, the directories in play, and which optional features are on.

use serde_json::{Map, Value, json};

use crate::engine::Engine;

/// What a driving program can ask keel for over `--input-format stream-json` (control
/// requests, callbacks keel makes, in-process servers). keel's own names: a program looking
/// for a feature keel lacks does not find it here.
pub const CAPABILITIES: &[&str] = &[
    "interrupt",
    "set_permission_mode",
    "set_model",
    "mcp_status",
    "can_use_tool",
    "hook_callback",
    "sdk_mcp_servers",
    "mcp_elicitation",
];

/// The `system/init` fields that describe the session itself.
pub fn init_fields(engine: &Engine) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("capabilities".into(), json!(CAPABILITIES));
    let memory = engine
        .harness()
        .memory_file
        .as_ref()
        .and_then(|f| f.parent())
        .map(|d| format!("{}/", d.display()));
    let mut memory_paths = Map::new();
    if let Some(dir) = memory {
        memory_paths.insert("auto".into(), dir.into());
    }
    m.insert("memory_paths".into(), Value::Object(memory_paths));
    let original = std::env::current_dir().unwrap_or_else(|_| engine.cwd().to_path_buf());
    m.insert("original_cwd".into(), original.display().to_string().into());
    let extra: Vec<String> = engine
        .services()
        .extra_dirs()
        .iter()
        .map(|d| d.display().to_string())
        .collect();
    m.insert("additional_directories".into(), json!(extra));
    let terminal: Vec<&str> = crate::commands::BUILTINS
        .iter()
        .filter(|b| !b.headless)
        .map(|b| b.name)
        .collect();
    m.insert("terminal_slash_commands".into(), json!(terminal));
    // keel sends no usage analytics and asks for no product feedback.
    m.insert("analytics_disabled".into(), true.into());
    m.insert("product_feedback_disabled".into(), true.into());
    m.insert(
        "sandbox_enabled".into(),
        (!matches!(engine.services().shell.sandbox, crate::sandbox::SandboxMode::Off)).into(),
    );
    m.insert("served_by_anthropic".into(), served_by_anthropic(engine).into());
    // Features keel does not have are reported off, with that as the reason.
    m.insert("fast_mode_state".into(), "off".into());
    m.insert("fast_mode_disabled_reason".into(), "unsupported".into());
    m.insert("per_turn_effort_active".into(), false.into());
    m.insert("ultrathink_available".into(), false.into());
    m.insert("ultrathink_typed_raises".into(), false.into());
    m.insert("view_mode".into(), "default".into());
    m
}

/// Whether the model is Anthropic's own API (not a proxy, a gateway or another provider).
fn served_by_anthropic(engine: &Engine) -> bool {
    engine.provider().name() == "anthropic"
        && std::env::var("ANTHROPIC_BASE_URL")
            .ok()
            .filter(|u| !u.trim().is_empty())
            .is_none_or(|u| u.trim_end_matches('/') == "https://api.anthropic.com")
}
