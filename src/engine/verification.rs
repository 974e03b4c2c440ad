//! The engine's side of the evidence ledger: a new turn resets the stop gate's count, and a
//! model that wants to end its turn is asked to verify first when the ledger says so.

use serde_json::json;

use super::Engine;
use super::events::NoticeLevel;

impl Engine {
    /// A user turn begins: the gate judges the changes made from here on.
    pub(super) fn begin_verification_turn(&mut self) {
        self.session.services.evidence.begin_turn();
    }

    /// The stop gate's note when the turn may not end yet (none inside a sub-agent: the
    /// session's own turn is judged, with the sub-agent's runs and changes in the ledger).
    pub(super) fn verification_gate(&mut self) -> Option<String> {
        let evidence = self.session.services.evidence.clone();
        if let Some(e) = evidence.take_write_error() {
            self.events.notice(NoticeLevel::Warning, e);
        }
        if self.subagent.is_some() {
            return None;
        }
        let note = evidence.gate(&self.session.services.todos())?;
        self.session.log_event(
            "verification_gate",
            json!({"mode": evidence.gate_mode().as_str(), "status": evidence.with_ledger(|l| l.status().as_str()), "note": note}),
        );
        let status = evidence.with_ledger(|l| l.status().as_str());
        self.events
            .notice(NoticeLevel::Info, crate::evidence::gate::sent_back_notice(Some(status)));
        Some(note)
    }
}
