//! Calls that reach the network from keel's own process and only observe (WebFetch,
//! WebSearch): `WebFetch(domain:…)` rules by the URL's host, whole-tool rules, and otherwise a
//! question in every mode but bypassPermissions — plan mode included, since they change
//! nothing locally but do send the model's words (a URL, a query) out of the machine.

use serde_json::Value;

use super::{Ctx, Verdict};
use crate::permissions::Mode;
use crate::permissions::rules::{Behavior, Rule, Spec};
use crate::tools::web::address::normalize_host;

impl Ctx<'_> {
    pub(super) fn web(&self, tool: &str, input: &Value, url: Option<&str>) -> Verdict {
        // The host as WebFetch itself will read the URL (an unreadable URL has none, so no
        // domain rule allows it; the tool refuses it anyway).
        let parsed = url.and_then(|u| crate::tools::web::fetch::parse_url(u).ok());
        let host = parsed.as_ref().and_then(|u| u.host_str()).map(normalize_host);
        let key = crate::tools::summarize_input(input);
        let hits = |r: &Rule| match (&r.spec, &host) {
            (Spec::Any, _) => true,
            (Spec::Domain { .. }, Some(h)) => r.matches_host(h),
            (Spec::Domain { .. }, None) => false,
            _ => r.matches_key(&key) || r.matches_param(input),
        };
        if let Some(r) = self.find(Behavior::Deny, tool, hits) {
            return Verdict::Deny(format!("denied by the rule `{}` ({})", r.text, r.source));
        }
        if let Some(r) = self.find(Behavior::Ask, tool, hits) {
            return self.hard_ask(format!("the rule `{}` asks for confirmation", r.text));
        }
        if self.find(Behavior::Allow, tool, hits).is_some() || self.mode == Mode::BypassPermissions {
            return Verdict::Allow;
        }
        match (&parsed, &host) {
            (Some(u), Some(h)) => self.ask(
                format!("{tool} reaches {u}"),
                vec![format!("{tool}(domain:{h})")],
                Vec::new(),
            ),
            _ if url.is_some() => self.ask(format!("{tool} reaches {key}"), Vec::new(), Vec::new()),
            _ => self.ask(
                format!("{tool} reaches the network: {key}"),
                vec![tool.to_string()],
                Vec::new(),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::json;

    use crate::permissions::rules::{Anchors, Behavior, Rule};
    use crate::permissions::{Authorizer, Mode, Verdict};

    fn authorizer(allow: &[&str], ask: &[&str], deny: &[&str]) -> Authorizer {
        let anchors = Anchors {
            cwd: "/w".into(),
            base_dir: "/w".into(),
            home: None,
        };
        let mut rules = Vec::new();
        for (list, b) in [(allow, Behavior::Allow), (ask, Behavior::Ask), (deny, Behavior::Deny)] {
            for r in list {
                rules.push(Rule::parse(r, b, "test", &anchors).unwrap());
            }
        }
        Authorizer::new(rules, vec!["/w".into()], None, None)
    }

    fn fetch(a: &Authorizer, url: &str, mode: Mode) -> Verdict {
        a.check(
            "WebFetch",
            &json!({"url": url, "prompt": "p"}),
            true,
            mode,
            Path::new("/w"),
            None,
        )
    }

    #[test]
    fn domain_rules_allow_ask_and_deny_by_host() {
        let a = authorizer(
            &["WebFetch(domain:docs.rs)", "WebFetch(domain:*.example.com)"],
            &["WebFetch(domain:ask.example.com)"],
            &["WebFetch(domain:evil.test)"],
        );
        assert_eq!(fetch(&a, "https://docs.rs/serde", Mode::Default), Verdict::Allow);
        assert_eq!(fetch(&a, "https://DOCS.rs./x", Mode::Default), Verdict::Allow);
        assert_eq!(fetch(&a, "https://api.example.com/v1", Mode::Default), Verdict::Allow);
        assert!(matches!(
            fetch(&a, "https://ask.example.com/", Mode::BypassPermissions),
            Verdict::Ask { hard: true, .. }
        ));
        match fetch(&a, "https://evil.test/", Mode::BypassPermissions) {
            Verdict::Deny(why) => assert!(why.contains("WebFetch(domain:evil.test)"), "{why}"),
            other => panic!("{other:?}"),
        }
        // A host no rule names is asked about (plan mode too: nothing changes locally, but the
        // URL leaves the machine), with the rule "allow always" would save.
        for mode in [Mode::Default, Mode::Plan, Mode::AcceptEdits] {
            match fetch(&a, "https://example.com/", mode) {
                Verdict::Ask { hard: false, info } => {
                    assert_eq!(info.reason, "WebFetch reaches https://example.com/");
                    assert_eq!(info.rules_to_save, vec!["WebFetch(domain:example.com)"]);
                }
                other => panic!("{mode:?}: {other:?}"),
            }
        }
        assert_eq!(
            fetch(&a, "https://example.com/", Mode::BypassPermissions),
            Verdict::Allow
        );
    }

    #[test]
    fn a_url_that_does_not_parse_is_allowed_by_no_domain_rule() {
        let a = authorizer(&["WebFetch(domain:docs.rs)"], &[], &[]);
        assert!(matches!(fetch(&a, "docs.rs/serde", Mode::Default), Verdict::Ask { .. }));
        assert!(matches!(
            fetch(&a, "https://user:pw@docs.rs/", Mode::Default),
            Verdict::Ask { .. }
        ));
    }

    #[test]
    fn web_search_takes_whole_tool_rules() {
        let search = |a: &Authorizer, mode| {
            a.check(
                "WebSearch",
                &json!({"query": "rust"}),
                true,
                mode,
                Path::new("/w"),
                None,
            )
        };
        match search(&authorizer(&[], &[], &[]), Mode::Default) {
            Verdict::Ask { info, .. } => assert_eq!(info.rules_to_save, vec!["WebSearch"]),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            search(&authorizer(&["WebSearch"], &[], &[]), Mode::Default),
            Verdict::Allow
        );
        assert!(matches!(
            search(
                &authorizer(&["WebSearch"], &[], &["WebSearch"]),
                Mode::BypassPermissions
            ),
            Verdict::Deny(_)
        ));
    }
}
