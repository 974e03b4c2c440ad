//! What skills leave in a session: the temporary allow rules of the running task, the
//! instructions waiting to join the next tool round, and the latest invocation of each skill
//! (re-mounted after compaction).

use std::sync::Mutex;

use crate::permissions::rules::Rule;

/// Most characters of one skill re-mounted after compaction (about 5,000 tokens).
pub const REMOUNT_EACH: usize = 20_000;
/// Most characters of all skills re-mounted after compaction (about 25,000 tokens).
pub const REMOUNT_TOTAL: usize = 100_000;

#[derive(Debug, Default)]
pub struct SkillState {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Allow rules granted by skills loaded during the running turn, by skill.
    grants: Vec<(String, Rule)>,
    /// The model to use for the rest of the turn (a skill's `model`).
    model: Option<String>,
    /// Loaded instructions waiting to be sent with the tool results: (tool_use_id, text).
    pending: Vec<(String, String)>,
    /// The latest text of each skill loaded in this session, oldest first.
    invoked: Vec<(String, String)>,
    /// Owners of the hooks registered by skills loaded during the running turn.
    hook_owners: Vec<String>,
}

impl SkillState {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds a skill's allow rules for the rest of the turn.
    pub fn grant(&self, skill: &str, rules: Vec<Rule>) {
        self.lock()
            .grants
            .extend(rules.into_iter().map(|r| (skill.to_string(), r)));
    }

    /// Takes back a skill's rules (its load failed).
    pub fn revoke(&self, skill: &str) {
        self.lock().grants.retain(|(s, _)| s != skill);
    }

    /// The temporary allow rules in force.
    pub fn grants(&self) -> Vec<Rule> {
        self.lock().grants.iter().map(|(_, r)| r.clone()).collect()
    }

    pub fn set_model(&self, model: Option<String>) {
        if model.is_some() {
            self.lock().model = model;
        }
    }

    pub fn model(&self) -> Option<String> {
        self.lock().model.clone()
    }

    /// A skill loaded in this turn registered hooks under `owner`.
    pub fn note_hooks(&self, owner: String) {
        let mut s = self.lock();
        if !s.hook_owners.contains(&owner) {
            s.hook_owners.push(owner);
        }
    }

    /// The owners of the hooks the turn's skills registered, to be removed as the turn ends.
    pub fn take_hook_owners(&self) -> Vec<String> {
        std::mem::take(&mut self.lock().hook_owners)
    }

    /// The turn ended: its grants and model override end with it.
    pub fn end_turn(&self) {
        let mut s = self.lock();
        s.grants.clear();
        s.model = None;
    }

    /// Queues a loaded skill's text for the tool round of `tool_use_id`.
    pub fn queue(&self, tool_use_id: &str, text: String) {
        self.lock().pending.push((tool_use_id.to_string(), text));
    }

    /// The queued texts, in the order of `ids` (the round's calls).
    pub fn take_queued(&self, ids: &[&str]) -> Vec<String> {
        let mut s = self.lock();
        let mut out = Vec::new();
        for id in ids {
            if let Some(i) = s.pending.iter().position(|(p, _)| p == id) {
                out.push(s.pending.remove(i).1);
            }
        }
        out
    }

    /// Remembers a skill's loaded text (replacing an earlier load of the same skill).
    pub fn record(&self, name: &str, text: &str) {
        let mut s = self.lock();
        s.invoked.retain(|(n, _)| n != name);
        s.invoked.push((name.to_string(), text.to_string()));
    }

    /// The loaded skills to show again after compaction: newest first, each and all within
    /// their budgets.
    pub fn remount_text(&self) -> Option<String> {
        let s = self.lock();
        if s.invoked.is_empty() {
            return None;
        }
        let mut out = String::from("### Skills loaded earlier in this session (their instructions still apply)");
        let mut left = REMOUNT_TOTAL;
        for (name, text) in s.invoked.iter().rev() {
            if left < 200 {
                break;
            }
            let max = left.min(REMOUNT_EACH);
            let body: String = if text.chars().count() > max {
                let cut: String = text.chars().take(max).collect();
                format!("{cut}\n[… cut here; load the skill again for the rest]")
            } else {
                text.clone()
            };
            left = left.saturating_sub(body.len());
            out.push_str(&format!("\n\n#### Skill `{name}`\n{body}"));
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queued_texts_follow_the_call_order_and_remount_is_newest_first() {
        let s = SkillState::default();
        s.queue("b", "B".into());
        s.queue("a", "A".into());
        assert_eq!(s.take_queued(&["a", "x", "b"]), vec!["A", "B"]);
        assert!(s.take_queued(&["a"]).is_empty());
        s.record("one", "first");
        s.record("two", "second");
        s.record("one", "first again");
        let text = s.remount_text().unwrap();
        let two = text.find("`two`").unwrap();
        let one = text.find("`one`").unwrap();
        assert!(one < two, "{text}");
        assert!(text.contains("first again") && !text.contains("first\n"), "{text}");
        s.set_model(Some("haiku".into()));
        s.end_turn();
        assert_eq!(s.model(), None);
    }

    #[test]
    fn remount_stays_within_budget() {
        let s = SkillState::default();
        for i in 0..10 {
            s.record(&format!("s{i}"), &"x".repeat(REMOUNT_EACH * 2));
        }
        let text = s.remount_text().unwrap();
        assert!(text.len() < REMOUNT_TOTAL + 2_000, "{}", text.len());
        assert!(text.contains("`s9`") && !text.contains("`s0`"));
    }
}
