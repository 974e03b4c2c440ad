//! Hooks that live in the program driving keel (the SDK's hook callbacks, registered with
//! `initialize`). keel calls them through the client with the same payload a command hook gets
//! on stdin; their answer is the same JSON a command hook prints, so the same rules decide.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::Value;

use super::config::HookConfig;
use super::runner::RunResult;

/// Calls a client-side hook by the id the client registered it under.
#[async_trait]
pub trait HookCallbacks: Send + Sync {
    /// The hook's JSON answer, or why there is none (the client failed or went away).
    async fn call(&self, callback_id: &str, payload: Value, tool_use_id: Option<String>) -> Result<Value, String>;
}

/// The client's hooks and the way to reach them.
#[derive(Default)]
pub struct ClientHooks {
    pub config: HookConfig,
    pub invoker: Option<Arc<dyn HookCallbacks>>,
}

/// Runs one callback like a command hook: an answer is exit 0 with the JSON on stdout; a failure
/// is a non-blocking error; no answer within `timeout` is a timeout.
pub async fn run(
    invoker: Option<&dyn HookCallbacks>,
    id: &str,
    payload: Value,
    tool_use_id: Option<String>,
    timeout: Duration,
) -> RunResult {
    let started = Instant::now();
    let Some(invoker) = invoker else {
        return RunResult {
            start_error: Some(format!("no client is connected to answer hook callback {id}")),
            ..RunResult::default()
        };
    };
    let mut r = match tokio::time::timeout(timeout, invoker.call(id, payload, tool_use_id)).await {
        Ok(Ok(answer)) => RunResult {
            exit_code: Some(0),
            // `{}` and null both mean "no decision".
            stdout: if answer.is_object() {
                answer.to_string()
            } else {
                String::new()
            },
            ..RunResult::default()
        },
        Ok(Err(e)) => RunResult {
            exit_code: Some(1),
            stderr: format!("the client's hook callback failed: {e}"),
            ..RunResult::default()
        },
        Err(_) => RunResult {
            timed_out: true,
            stderr: format!("got no answer from the client within {}s", timeout.as_secs()),
            ..RunResult::default()
        },
    };
    r.duration_ms = started.elapsed().as_millis() as u64;
    r
}
