//! The session engine and its turn driver.
//!
//! [`Engine`] owns the [`Session`] (long-lived state) and drives one user turn at a time:
//! project state into a request, stream the model's output as [`EngineEvent`]s, run tool calls
//! through the [`pipeline`], append results, repeat until the model stops calling tools, the
//! turn limit is reached or the user cancels.

mod authorize;
pub mod events;
mod lifecycle;
pub mod pipeline;
pub mod session;
mod tool_hooks;
mod turn;

use std::sync::Arc;

use tokio::sync::mpsc;

pub use events::{EngineEvent, NoticeLevel, ResultSubtype, TurnOutcome};
pub use session::Session;

use crate::hooks::Hooks;
use crate::permissions::Authorizer;
use crate::provider::{Provider, SystemBlock};
use crate::tools::registry::ToolRegistry;

#[derive(Debug, Clone)]
pub struct EngineConfig {
    pub model: String,
    pub max_tokens: u32,
    /// Model requests allowed per user turn (`--max-turns`).
    pub max_turns: Option<u32>,
    pub system: Vec<SystemBlock>,
    /// Whether a front end answers permission questions; headless mode cannot.
    pub interactive: bool,
}

/// Sends engine events to whoever consumes them; a consumer that went away is not an error.
#[derive(Clone)]
pub struct EventSink(mpsc::UnboundedSender<EngineEvent>);

impl EventSink {
    pub fn emit(&self, event: EngineEvent) {
        let _ = self.0.send(event);
    }

    pub fn notice(&self, level: NoticeLevel, message: impl Into<String>) {
        self.emit(EngineEvent::Notice {
            level,
            message: message.into(),
        });
    }
}

pub struct Engine {
    pub config: EngineConfig,
    pub provider: Arc<dyn Provider>,
    pub registry: Arc<ToolRegistry>,
    pub authorizer: Arc<Authorizer>,
    pub hooks: Arc<Hooks>,
    pub session: Session,
    events: EventSink,
    /// Hook output waiting to be shown to the model with the next user message.
    pending_context: Vec<String>,
}

impl Engine {
    pub fn new(
        config: EngineConfig,
        provider: Arc<dyn Provider>,
        registry: Arc<ToolRegistry>,
        authorizer: Arc<Authorizer>,
        hooks: Arc<Hooks>,
        session: Session,
    ) -> (Engine, mpsc::UnboundedReceiver<EngineEvent>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (
            Engine {
                config,
                provider,
                registry,
                authorizer,
                hooks,
                session,
                events: EventSink(tx),
                pending_context: Vec::new(),
            },
            rx,
        )
    }

    pub fn events(&self) -> &EventSink {
        &self.events
    }
}
