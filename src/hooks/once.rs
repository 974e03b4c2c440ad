//! `once: true` on a hook of a skill's front matter: the handler runs at most once in the
//! session. The first event it matches takes it out of the skill's scoped hooks (under the
//! same lock the match is made under, so two events at once cannot both run it), and the
//! session remembers it, so loading the skill again does not bring it back.

use std::collections::BTreeSet;

use super::config::{Event, Handler, HookConfig};

/// A once-handler as the session remembers it: the owner that registered it (`skill:NAME`),
/// its event, its group's matcher, the handler.
pub(crate) type Key = (String, Event, String, Handler);

/// The once-handlers that have run in this session.
pub(crate) type Spent = BTreeSet<Key>;

impl HookConfig {
    /// Removes the `once` groups of `event` whose matcher fits `target` (they run this time,
    /// and never again), naming their handlers.
    pub(crate) fn take_once(&mut self, owner: &str, event: Event, target: Option<&str>) -> Vec<Key> {
        let Some(groups) = self.events.get_mut(&event) else {
            return Vec::new();
        };
        let mut taken = Vec::new();
        groups.retain(|g| {
            if !(g.once && g.matcher.matches(target)) {
                return true;
            }
            taken.extend(
                g.handlers
                    .iter()
                    .map(|h| (owner.to_string(), event, g.matcher_text.clone(), h.clone())),
            );
            false
        });
        taken
    }

    /// Leaves out the `once` handlers of `owner` that already ran in this session.
    pub(crate) fn drop_spent(&mut self, owner: &str, spent: &Spent) {
        if spent.is_empty() {
            return;
        }
        for (event, groups) in self.events.iter_mut() {
            for g in groups.iter_mut().filter(|g| g.once) {
                let matcher = g.matcher_text.clone();
                g.handlers
                    .retain(|h| !spent.contains(&(owner.to_string(), *event, matcher.clone(), h.clone())));
            }
            groups.retain(|g| !(g.once && g.handlers.is_empty()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config() -> HookConfig {
        let mut c = HookConfig::default();
        c.add_layer(
            &json!({"PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "command", "command": "always.sh"},
                {"type": "command", "command": "first.sh", "once": true},
                {"type": "command", "command": "last.sh"}
            ]}]}),
            "skill s",
        )
        .unwrap();
        c
    }

    fn labels(c: &HookConfig, target: &str) -> Vec<String> {
        c.matching(Event::PreToolUse, Some(target))
            .iter()
            .map(|h| h.label())
            .collect()
    }

    #[test]
    fn once_handlers_keep_their_place_and_leave_after_their_first_match() {
        let mut c = config();
        assert_eq!(labels(&c, "Bash"), ["always.sh", "first.sh", "last.sh"]);
        assert!(c.take_once("skill:s", Event::PreToolUse, Some("Read")).is_empty());
        let taken = c.take_once("skill:s", Event::PreToolUse, Some("Bash"));
        assert_eq!(taken.len(), 1);
        assert_eq!(labels(&c, "Bash"), ["always.sh", "last.sh"]);

        // Registered again (the skill loads once more): the spent handler stays out.
        let spent: Spent = taken.into_iter().collect();
        let mut again = config();
        again.drop_spent("skill:s", &spent);
        assert_eq!(labels(&again, "Bash"), ["always.sh", "last.sh"]);
        // Another skill's identical handler is its own.
        let mut other = config();
        other.drop_spent("skill:t", &spent);
        assert_eq!(labels(&other, "Bash").len(), 3);
    }

    #[test]
    fn once_must_be_a_boolean() {
        let mut c = HookConfig::default();
        let e = c
            .add_layer(
                &json!({"Stop": [{"hooks": [{"type": "command", "command": "x", "once": "yes"}]}]}),
                "skill s",
            )
            .unwrap_err();
        assert!(e.to_string().contains("`once` must be true or false"), "{e}");
    }
}
