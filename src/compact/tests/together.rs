//! The tiers together: the cold view, the compactor's frontier, the request layout.

use std::sync::Arc;

use serde_json::{Value, json};

use super::*;
use crate::compact::compactor::{Compactor, cold_view};
use crate::context::tokens::{self, Window};
use crate::types::message::{ContentBlock, Message, Role, ToolResultContent};

#[test]
fn all_tiers_together_shrink_the_cold_part_and_keep_the_api_shape() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = snip_history();
    let more = collapse_history();
    for pair in more.messages[1..].chunks(2) {
        h.messages.extend(pair.iter().cloned().map(|mut m| {
            for b in &mut m.content {
                match b {
                    ContentBlock::ToolUse { id, .. } | ContentBlock::ToolResult { tool_use_id: id, .. } => {
                        *id = format!("x{id}")
                    }
                    _ => {}
                }
            }
            m
        }));
    }
    let mc = microcompact_history();
    h.messages
        .push(Message::assistant(vec![ContentBlock::text("Next, the slow build.")]));
    h.messages.push(Message::user_text("Also look at the build."));
    for pair in mc.messages[1..].chunks(2) {
        h.messages.extend(pair.iter().cloned().map(|mut m| {
            for b in &mut m.content {
                match b {
                    ContentBlock::ToolUse { id, .. } | ContentBlock::ToolResult { tool_use_id: id, .. } => {
                        *id = format!("y{id}")
                    }
                    _ => {}
                }
            }
            m
        }));
    }
    let store = h.messages;
    let upto = store.len() - 4;
    let view = cold_view(&store, 0..upto, dir.path(), &Default::default(), &Default::default());
    insta::assert_snapshot!("all_tiers_before", render(&store[..upto], dir.path()));
    insta::assert_snapshot!("all_tiers_after", render(&view.messages, dir.path()));
    view.check(0, upto).unwrap();
    let mut full = view.messages.clone();
    full.extend(store[upto..].iter().cloned());
    assert_pairs_valid(&full);
    let before = tokens::messages(&store[..upto]);
    let after = tokens::messages(&view.messages);
    assert!(after * 3 < before * 2, "{after} vs {before}");
}

#[test]
fn compactor_moves_the_frontier_in_steps_and_appends_between_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Compactor::new(
        Window::new(200_000, None, 32_000),
        crate::compact::CompactSettings::default(),
    );
    c.policy.hot_min = 2;
    c.policy.hot_max = 6;
    let mut store = vec![Message::user_text("survey the repository")];
    let mut previous: Option<Arc<Vec<Message>>> = None;
    let mut rebuilds_at = Vec::new();
    let mut frontiers = vec![0];
    for i in 0..20 {
        store.push(Message::assistant(vec![ContentBlock::ToolUse {
            id: format!("c{i}"),
            name: "Read".into(),
            input: json!({"file_path": format!("/r/f{i}.rs")}),
        }]));
        store.push(Message {
            role: Role::User,
            content: vec![ContentBlock::tool_result(
                format!("c{i}"),
                ToolResultContent::Text(numbered(1..=40, &format!("f{i}"))),
                false,
            )],
        });
        let shared = Arc::new(store.clone());
        let before = c.stats.rebuilds;
        let view = c.view(&shared, dir.path());
        let sending = c.sending(&view);
        if c.stats.rebuilds > before {
            rebuilds_at.push(i);
            frontiers.push(c.frontier());
            // A step keeps the cold part earlier requests sent, byte for byte, and says where
            // it ends (the prefix a prompt cache still holds).
            let prev = previous.as_ref().unwrap();
            let kept = view.anchors.kept_end.map_or(0, |k| k + 1);
            assert_eq!(&view.messages[..kept], &prev[..kept], "request {i}");
            // The request vouches for those to the encoders, as continuing the previous one.
            assert_eq!(sending.unchanged.len, kept, "request {i}");
            assert_ne!(sending.unchanged.lineage, sending.unchanged.after, "request {i}");
            if frontiers.len() > 2 {
                assert!(kept > 0, "request {i}: a second step keeps the first one's cold part");
            }
        } else if let Some(prev) = &previous {
            // Between steps the new request starts with the previous one, byte for byte.
            assert_eq!(&view.messages[..prev.len()], &prev[..], "request {i}");
        }
        // The view is each step's tiers over the messages that step made cold, then the hot
        // part verbatim.
        let mut fresh = Vec::new();
        for w in frontiers.windows(2) {
            fresh.extend(cold_view(&store, w[0]..w[1], dir.path(), &Default::default(), &Default::default()).messages);
        }
        let upto = c.frontier();
        if upto > 0 {
            assert_eq!(view.anchors.cold_end, Some(fresh.len() - 1), "request {i}");
        }
        fresh.extend(store[upto..].iter().cloned());
        assert_eq!(*view.messages, fresh, "request {i}");
        assert_pairs_valid(&view.messages);
        previous = Some(view.messages.clone());
    }
    // The frontier moved when more than six exchanges were verbatim, keeping two.
    assert_eq!(rebuilds_at, vec![6, 11, 16]);
    let last = previous.unwrap();
    assert!(tokens::messages(&last) * 2 < tokens::messages(&store));
    let squeezed = c.squeeze(&Arc::new(store.clone()), dir.path());
    assert!(squeezed.tokens < c.view(&Arc::new(store.clone()), dir.path()).tokens + 1);
    assert_eq!(
        c.frontier(),
        store.len() - 2,
        "squeezing keeps only the newest exchange"
    );
    // Another squeeze waits until the history has grown (each turn near the window would
    // otherwise re-run the tiers over all of it).
    assert!(!c.squeeze_due(store.len()) && !c.squeeze_due(store.len() + 7));
    assert!(c.squeeze_due(store.len() + 8));
    // Squeezing re-runs the tiers over the whole cold part.
    let mut full = cold_view(
        &store,
        0..c.frontier(),
        dir.path(),
        &Default::default(),
        &Default::default(),
    )
    .messages;
    full.extend(store[c.frontier()..].iter().cloned());
    assert_eq!(*squeezed.messages, full);
    assert_eq!(
        squeezed.anchors.kept_end, None,
        "nothing sent before survives a rebuild"
    );
}

#[test]
fn a_step_leaves_what_was_sent_alone_and_squeezing_catches_up() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Compactor::new(
        Window::new(200_000, None, 32_000),
        crate::compact::CompactSettings::default(),
    );
    c.policy.hot_min = 1;
    c.policy.hot_max = 2;
    let mut store = vec![Message::user_text("survey")];
    let read = |store: &mut Vec<Message>, id: &str, file: &str| {
        store.push(Message::assistant(vec![ContentBlock::ToolUse {
            id: id.into(),
            name: "Bash".into(),
            input: json!({"command": format!("grep -c x {file}")}),
        }]));
        store.push(Message {
            role: Role::User,
            content: vec![ContentBlock::tool_result(
                id,
                ToolResultContent::Text(format!("{file}: 3 matches")),
                false,
            )],
        });
    };
    read(&mut store, "early", "alpha");
    read(&mut store, "b", "beta");
    read(&mut store, "g", "gamma");
    let first = c.view(&Arc::new(store.clone()), dir.path());
    assert!(c.frontier() > 2, "the first step made the early call cold");
    assert!(first.messages.iter().any(|m| m.tool_uses().any(|u| u.id == "early")));
    // The same call repeated with the same result supersedes the early one, but the early one
    // sits in the cold part earlier requests sent: a step leaves it as it was.
    read(&mut store, "again", "alpha");
    read(&mut store, "d", "delta");
    read(&mut store, "e", "epsilon");
    let later = c.view(&Arc::new(store.clone()), dir.path());
    assert!(later.anchors.kept_end.is_some());
    assert_eq!(
        later.messages[..first.anchors.cold_end.unwrap() + 1],
        first.messages[..first.anchors.cold_end.unwrap() + 1]
    );
    assert!(later.messages.iter().any(|m| m.tool_uses().any(|u| u.id == "early")));
    // Near the window, squeezing rebuilds everything: the early call is snipped now.
    let squeezed = c.squeeze(&Arc::new(store.clone()), dir.path());
    assert!(!squeezed.messages.iter().any(|m| m.tool_uses().any(|u| u.id == "early")));
    assert!(render(&squeezed.messages, dir.path()).contains("[Snipped Bash"));
}

#[test]
fn request_layout_with_cache_breakpoints() {
    let dir = tempfile::tempdir().unwrap();
    let h = collapse_history();
    let project = crate::context::ProjectContext::bare(dir.path(), "Environment:\n- Working directory: /r");
    let tools = crate::tools::registry::ToolRegistry::new(crate::tools::builtin_tools()).unwrap();
    let req = crate::context::assemble::request(
        "claude-sonnet-4-5",
        32_000,
        &project.system_blocks(),
        &tools.tool_set(),
        Arc::new(h.messages.clone()),
    );
    insta::assert_snapshot!("request_layout", layout::request(&req, &[]));
    let marks = req.system.iter().filter(|b| b.cache_control.is_some()).count() + req.cache_breakpoints.len();
    assert!(marks <= crate::context::assemble::MAX_BREAKPOINTS);
    let body: Value = serde_json::from_slice(&crate::provider::anthropic::wire_body(&req).unwrap()).unwrap();
    let msgs = body["messages"].as_array().unwrap();
    let last = msgs.last().unwrap()["content"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["cache_control"], json!({"type": "ephemeral"}));
    let marked = msgs
        .iter()
        .filter(|m| {
            m["content"]
                .as_array()
                .unwrap()
                .iter()
                .any(|b| b.get("cache_control").is_some())
        })
        .count();
    assert_eq!(marked, 2);
    // The history itself was not touched to mark it.
    assert!(h.messages.iter().flat_map(|m| &m.content).all(|b| !matches!(
        b,
        ContentBlock::Text {
            cache_control: Some(_),
            ..
        } | ContentBlock::ToolResult {
            cache_control: Some(_),
            ..
        }
    )));
}

#[test]
fn requests_vouch_for_what_they_repeat_and_a_replaced_history_starts_over() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Compactor::new(
        Window::new(200_000, None, 32_000),
        crate::compact::CompactSettings::default(),
    );
    let mut store = vec![Message::user_text("go")];
    store.push(Message::assistant(vec![ContentBlock::text("a")]));
    store.push(Message::user_text("b"));
    let first = c.view(&Arc::new(store.clone()), dir.path());
    let s1 = c.sending(&first);
    assert!(s1.moved);
    assert_eq!(s1.unchanged.len, 0);
    store.push(Message::assistant(vec![ContentBlock::text("c")]));
    store.push(Message::user_text("d"));
    let second = c.view(&Arc::new(store.clone()), dir.path());
    let s2 = c.sending(&second);
    assert!(!s2.moved);
    // The last message of the previous request may have grown since: not vouched for.
    assert_eq!(s2.unchanged.len, first.messages.len() - 1);
    assert_eq!(s2.unchanged.lineage, s1.unchanged.lineage);
    assert_eq!(
        &second.messages[..s2.unchanged.len],
        &first.messages[..s2.unchanged.len]
    );
    // A history replaced by one just as long (a rewind) is a new view: nothing is vouched for.
    let replaced: Vec<Message> = store
        .iter()
        .map(|m| Message {
            role: m.role,
            content: vec![ContentBlock::text("other")],
        })
        .collect();
    c.follow(1);
    let third = c.view(&Arc::new(replaced), dir.path());
    let s3 = c.sending(&third);
    assert!(s3.moved);
    assert_eq!(s3.unchanged.len, 0);
    assert_ne!(s3.unchanged.lineage, s2.unchanged.lineage);
}

#[test]
fn a_cold_part_that_grew_is_built_whole_again_when_that_saves_enough() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Compactor::new(
        Window::new(200_000, None, 32_000),
        crate::compact::CompactSettings::default(),
    );
    let mut store = vec![Message::user_text("go")];
    let exchange = |store: &mut Vec<Message>, id: String, command: String, output: String| {
        store.push(Message::assistant(vec![ContentBlock::ToolUse {
            id: id.clone(),
            name: "Bash".into(),
            input: json!({"command": command}),
        }]));
        store.push(Message {
            role: Role::User,
            content: vec![ContentBlock::tool_result(id, ToolResultContent::Text(output), false)],
        });
    };
    // Small results stay verbatim when cold; the first forty commands come back, with the same
    // output, long after the steps that made them cold.
    let output = |i: usize| format!("{}\n", format!("line of output {i} ").repeat(25));
    for i in 0..40 {
        exchange(&mut store, format!("c{i}"), format!("run {i}"), output(i));
        c.view(&Arc::new(store.clone()), dir.path());
    }
    for i in 0..40 {
        exchange(&mut store, format!("again{i}"), format!("run {i}"), output(i));
        c.view(&Arc::new(store.clone()), dir.path());
    }
    for i in 40..120 {
        exchange(&mut store, format!("c{i}"), format!("run {i}"), output(i));
        c.view(&Arc::new(store.clone()), dir.path());
    }
    let view = c.view(&Arc::new(store.clone()), dir.path());
    assert!(c.stats.consolidations > 0);
    let uses = |id: &str| view.messages.iter().any(|m| m.tool_uses().any(|u| u.id == id));
    assert!(!uses("c0") && !uses("c39"), "the superseded early calls left the view");
    assert!(uses("c40") && uses("again0"));
    assert_pairs_valid(&view.messages);
}
