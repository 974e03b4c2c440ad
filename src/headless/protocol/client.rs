//! keel's side of requests to the client: `can_use_tool`, `hook_callback`, `mcp_message`
//! (see `mcp_relay.rs`). Each request gets an id; the answer arrives on stdin and is routed back here
//! by the reader. When the client closes its input, every open request fails at once, so
//! nothing waits forever.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;

use async_trait::async_trait;
use serde_json::Value;
use tokio::sync::oneshot;

use super::codec;
use crate::console::err_line;
use crate::headless::out::Out;
use crate::hooks::HookCallbacks;
use crate::permissions::PermissionPrompt;

type Pending = HashMap<String, oneshot::Sender<Result<Value, String>>>;

pub struct ClientLink {
    out: Arc<Out>,
    /// `None` once the client closed its input.
    pending: Mutex<Option<Pending>>,
}

impl ClientLink {
    pub fn new(out: Arc<Out>) -> Self {
        ClientLink {
            out,
            pending: Mutex::new(Some(HashMap::new())),
        }
    }

    /// Sends a request and waits for its answer.
    pub async fn request(&self, request: Value) -> Result<Value, String> {
        let id = uuid::Uuid::new_v4().to_string();
        let (tx, rx) = oneshot::channel();
        {
            let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
            let Some(map) = pending.as_mut() else {
                return Err("the client has closed its input".into());
            };
            map.insert(id.clone(), tx);
        }
        let guard = Unanswered { link: self, id: &id };
        self.out.line(&codec::control_request(&id, request));
        let r = rx
            .await
            .unwrap_or_else(|_| Err("the client closed its input before answering".into()));
        std::mem::forget(guard);
        r
    }

    /// Routes an answer to its request; false when no such request is open.
    pub fn resolve(&self, id: &str, result: Result<Value, String>) -> bool {
        let tx = self
            .pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_mut()
            .and_then(|m| m.remove(id));
        match tx {
            Some(tx) => tx.send(result).is_ok(),
            None => false,
        }
    }

    /// The client closed its input: open and later requests fail.
    pub fn close(&self) {
        self.pending.lock().unwrap_or_else(|p| p.into_inner()).take();
    }

    /// Asks the client about a tool call and hands its decision to the engine. If the engine
    /// stops waiting (the turn was interrupted), the client is told to drop the question.
    pub async fn ask_permission(self: Arc<Self>, mut prompt: PermissionPrompt) {
        let request = codec::can_use_tool(&prompt);
        let answer = tokio::select! {
            a = self.request(request) => a,
            _ = prompt.reply.closed() => return,
        };
        let (reply, ignored) = codec::permission_reply(answer);
        if !ignored.is_empty() {
            err_line!(
                "keel: warning: the approval of {} came with permission updates keel cannot read, so none of them was applied: {}",
                prompt.tool_name,
                ignored.join(", ")
            );
        }
        let _ = prompt.reply.send(reply);
    }
}

/// Drops a request's entry (and tells the client) when the waiting side goes away first.
struct Unanswered<'a> {
    link: &'a ClientLink,
    id: &'a str,
}

impl Drop for Unanswered<'_> {
    fn drop(&mut self) {
        let open = self
            .link
            .pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_mut()
            .and_then(|m| m.remove(self.id))
            .is_some();
        if open {
            self.link.out.line(&codec::control_cancel(self.id));
        }
    }
}

#[async_trait]
impl HookCallbacks for ClientLink {
    async fn call(&self, callback_id: &str, payload: Value, tool_use_id: Option<String>) -> Result<Value, String> {
        self.request(codec::hook_callback(callback_id, payload, tool_use_id))
            .await
    }
}
