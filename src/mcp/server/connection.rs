//! A server's live connection: the slot that holds it, opening it (the first time, or a
//! bounded restart after a crash) and the client handle one request uses. Separate from the
//! requests, which only ask for a peer.

use std::sync::atomic::Ordering;

use serde_json::Value;

use super::{CallError, MAX_RESTARTS, Reach, Server, State};
use crate::mcp::config::ServerSpec;
use crate::mcp::transport::{self, KeelClient, OpenError, OpenOptions, Opened, Service, Target};

pub(super) struct Live {
    pub(super) service: Service,
    pub(super) opened: Opened,
    pub(super) capabilities: Value,
}

impl Live {
    pub(super) fn is_closed(&mut self) -> bool {
        if self.service.is_closed() || self.service.peer().is_transport_closed() {
            return true;
        }
        match &mut self.opened {
            Opened::Child { child, .. } => !matches!(child.try_wait(), Ok(None)),
            Opened::Remote => false,
        }
    }

    pub(super) fn exit_note(&mut self) -> String {
        if let Some(reason) = self.tripped() {
            return reason;
        }
        match &mut self.opened {
            Opened::Child { child, .. } => match child.try_wait() {
                Ok(Some(status)) => format!("the server process exited ({status})"),
                _ => "the connection to the server closed".into(),
            },
            Opened::Remote => "the connection to the server closed".into(),
        }
    }
}

impl Live {
    /// Why keel itself closed the connection (a message over the size bound), if it did.
    pub(super) fn tripped(&self) -> Option<String> {
        match &self.opened {
            Opened::Child { tripped, .. } => tripped.reason(),
            Opened::Remote => None,
        }
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        if let Opened::Child { group, .. } = &mut self.opened {
            group.kill_and_disarm();
        }
    }
}

pub(super) struct Slot {
    pub(super) live: Option<Live>,
    /// Whether a connection was ever open: opening another one counts as a restart.
    pub(super) ever_connected: bool,
}

impl Server {
    /// Makes sure a connection is open: the first one, or a restart after a crash (bounded).
    /// `note` with the last lines the server wrote to its stderr log, when there are any.
    pub(super) fn with_stderr_tail(&self, note: String) -> String {
        let tail = transport::log_tail(&self.log, 5);
        if tail.is_empty() {
            note
        } else {
            format!("{note}; stderr:\n{tail}")
        }
    }

    pub(super) async fn ensure_live(&self, slot: &mut Slot, restart: bool) -> Result<(), String> {
        if let Some(live) = slot.live.as_mut() {
            if !live.is_closed() {
                return Ok(());
            }
            let detail = self.with_stderr_tail(live.exit_note());
            slot.live = None;
            self.set_state(State::Failed, Some(detail));
        }
        if matches!(self.reach, Reach::None) || self.state() == State::Disabled {
            let detail = self
                .status()
                .detail
                .unwrap_or_else(|| "it is not configured to run".into());
            return Err(detail);
        }
        // A server that refused keel is asked again only once someone signed in since.
        let signed_in_again = self.state() == State::NeedsAuth && self.recheck_sign_in();
        if self.state() == State::NeedsAuth {
            return Err(self.status().detail.unwrap_or_default());
        }
        if (slot.ever_connected || restart) && !signed_in_again {
            if self.restarts.load(Ordering::Relaxed) >= MAX_RESTARTS {
                let detail = self.status().detail.unwrap_or_default();
                return Err(format!(
                    "it stopped and was restarted {MAX_RESTARTS} times, so it is not restarted again in this session (last problem: {detail})"
                ));
            }
            self.restarts.fetch_add(1, Ordering::Relaxed);
        }
        let relayed = self.relay.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let target = match (&self.reach, relayed.as_ref()) {
            (Reach::Spec(ServerSpec::Sdk), Some(c)) | (Reach::Channel(c), _) => Target::Channel(c),
            (Reach::Spec(spec), _) => Target::Spec(spec),
            (Reach::None, _) => return Err("it is not configured to run".into()),
        };
        let client = KeelClient {
            server: self.name.clone(),
            tools_changed: self.tools_changed.clone(),
            elicitation: self.elicitation.clone(),
        };
        let opts = OpenOptions {
            project_dir: &self.project_dir,
            log: &self.log,
            access: self.access.as_ref(),
        };
        self.set_state(State::Pending, None);
        let opened = tokio::time::timeout(self.timeouts.startup, transport::open(target, client, &opts)).await;
        match opened {
            Ok(Ok((service, opened))) => {
                let info = service.peer().peer_info().and_then(|i| serde_json::to_value(&*i).ok());
                let capabilities = info
                    .as_ref()
                    .and_then(|i| i.get("capabilities").cloned())
                    .unwrap_or(Value::Null);
                let server_info = info.as_ref().and_then(|i| i.get("serverInfo")).map(|s| {
                    format!(
                        "{} {}",
                        s.get("name").and_then(Value::as_str).unwrap_or("?"),
                        s.get("version").and_then(Value::as_str).unwrap_or("")
                    )
                    .trim()
                    .to_string()
                });
                slot.live = Some(Live {
                    service,
                    opened,
                    capabilities,
                });
                slot.ever_connected = true;
                let mut s = self.status.lock().unwrap_or_else(|p| p.into_inner());
                *s = (State::Connected, None, server_info);
                Ok(())
            }
            Ok(Err(OpenError::NeedsAuth(m))) => {
                self.refused(m.clone());
                Err(m)
            }
            Ok(Err(OpenError::Failed(m))) => {
                self.set_state(State::Failed, Some(m.clone()));
                Err(m)
            }
            Err(_) => {
                let m = format!(
                    "it did not finish starting within {} s (MCP_TIMEOUT, in milliseconds)",
                    self.timeouts.startup.as_secs_f64()
                );
                self.set_state(State::Failed, Some(m.clone()));
                Err(m)
            }
        }
    }

    /// The client for one request, restarting a crashed server (bounded).
    pub(super) async fn peer(&self) -> Result<rmcp::Peer<rmcp::RoleClient>, CallError> {
        let mut slot = self.slot.lock().await;
        self.ensure_live(&mut slot, true)
            .await
            .map_err(CallError::Unavailable)?;
        match slot.live.as_ref() {
            Some(l) => Ok(l.service.peer().clone()),
            None => Err(CallError::Unavailable("not connected".into())),
        }
    }
}
