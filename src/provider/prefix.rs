//! Encoded history kept between requests. Each request of a session extends the previous one,
//! so re-encoding the whole conversation every turn made keel's CPU per turn grow with its
//! length. The cache keeps each message's encoding; a request compares its messages with the
//! cached ones (a comparison costs a fraction of encoding), encodes only what is new or changed,
//! and copies the rest. Messages that carry a cache breakpoint are encoded fresh every time.
//!
//! A few conversations are kept (the main one and sub-agents' take turns on one provider).

use std::sync::Mutex;

use crate::types::message::{Message, Role};

/// Conversations kept at once (the main one and a sub-agent's).
const ENTRIES: usize = 2;

/// Encodes one message as zero or more wire items, each followed by a comma. The flag asks for
/// a prompt-cache breakpoint on the message.
pub type Encoder<'a> = dyn FnMut(&Message, bool, &mut Vec<u8>) -> Result<(), String> + 'a;

/// "The first `len` messages equal those of the request written as `after`": what the
/// compactor knows without comparing (it only appended since, or a frontier step kept them as
/// they were sent). A lineage names one conversation and one generation of its view; `lineage`
/// is this request's, `after` the previous request's (the same within a generation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unchanged {
    pub lineage: (u64, u64),
    pub after: (u64, u64),
    pub len: usize,
}

#[derive(Default)]
struct Entry {
    /// The lineage of the request last written from this entry.
    lineage: Option<(u64, u64)>,
    messages: Vec<Message>,
    bytes: Vec<u8>,
    /// End of each message's items in `bytes`.
    ends: Vec<usize>,
    used: u64,
}

impl Entry {
    fn truncate(&mut self, len: usize) {
        self.messages.truncate(len);
        self.ends.truncate(len);
        self.bytes.truncate(self.ends.last().copied().unwrap_or(0));
    }
}

#[derive(Default)]
struct State {
    /// What the encodings depend on besides the message (model capabilities): a change empties
    /// the cache.
    flavor: String,
    entries: Vec<Entry>,
    clock: u64,
}

/// What the last write reused, for tests and diagnostics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reuse {
    pub reused: usize,
    pub encoded: usize,
}

#[derive(Default)]
pub struct PrefixCache {
    state: Mutex<State>,
}

impl std::fmt::Debug for PrefixCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PrefixCache")
    }
}

impl PrefixCache {
    /// Appends the items of `messages` (each followed by a comma) to `out`. `marked`: indices
    /// encoded with a breakpoint. `unchanged`: how many leading messages need no comparison.
    pub fn write(
        &self,
        flavor: &str,
        messages: &[Message],
        unchanged: Option<Unchanged>,
        marked: &[usize],
        out: &mut Vec<u8>,
        encode: &mut Encoder<'_>,
    ) -> Result<Reuse, String> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if state.flavor != flavor {
            state.entries.clear();
            state.flavor = flavor.to_string();
        }
        state.clock += 1;
        let clock = state.clock;
        let entry = pick(&mut state.entries, messages);
        entry.used = clock;
        // Comparing is what grows with a long history: skip what the caller vouches for.
        let vouched = match unchanged {
            Some(u) if entry.lineage == Some(u.after) => u.len.min(entry.messages.len()).min(messages.len()),
            _ => 0,
        };
        debug_assert!(
            entry.messages[..vouched]
                .iter()
                .zip(&messages[..vouched])
                .all(|(a, b)| same_message(a, b)),
            "a request vouched for messages that changed"
        );
        entry.lineage = unchanged.map(|u| u.lineage);
        let common = vouched
            + entry.messages[vouched..]
                .iter()
                .zip(&messages[vouched..])
                .take_while(|(cached, new)| same_message(cached, new))
                .count();
        entry.truncate(common);
        for m in &messages[common..] {
            encode(m, false, &mut entry.bytes)?;
            entry.ends.push(entry.bytes.len());
            entry.messages.push(m.clone());
        }
        // One allocation for the whole body: growing it by doubling copied a long history's
        // bytes twice more and mapped fresh pages for each size on every request.
        out.reserve(entry.bytes.len() + 1024);
        let mut from = 0usize;
        for (i, m) in messages.iter().enumerate() {
            if !marked.contains(&i) {
                continue;
            }
            let start = if i == 0 { 0 } else { entry.ends[i - 1] };
            out.extend_from_slice(&entry.bytes[from..start]);
            encode(m, true, out)?;
            from = entry.ends[i];
        }
        out.extend_from_slice(&entry.bytes[from..entry.bytes.len()]);
        Ok(Reuse {
            reused: common,
            encoded: messages.len() - common,
        })
    }
}

/// Whether two messages encode to the same bytes: like `==`, but objects compare in order (the
/// order is what gets encoded) and without hashing their keys, so a long history costs little
/// more than a memory comparison.
fn same_message(a: &Message, b: &Message) -> bool {
    use crate::types::message::ContentBlock as B;
    a.role == b.role
        && a.content.len() == b.content.len()
        && a.content.iter().zip(&b.content).all(|pair| match pair {
            (
                B::ToolUse { id, name, input },
                B::ToolUse {
                    id: i2,
                    name: n2,
                    input: v2,
                },
            ) => id == i2 && name == n2 && same_value(input, v2),
            (x, y) => x == y,
        })
}

fn same_value(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value as V;
    match (a, b) {
        (V::Object(x), V::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((k1, v1), (k2, v2))| k1 == k2 && same_value(v1, v2))
        }
        (V::Array(x), V::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(v1, v2)| same_value(v1, v2)),
        _ => a == b,
    }
}

/// The entry for this conversation: the most recent one that starts with the same message,
/// else a fresh one (dropping the least recently used when full).
fn pick<'a>(entries: &'a mut Vec<Entry>, messages: &[Message]) -> &'a mut Entry {
    let found = entries
        .iter()
        .enumerate()
        .filter(|(_, e)| !e.messages.is_empty() && e.messages.first() == messages.first())
        .max_by_key(|(_, e)| e.used)
        .map(|(i, _)| i);
    let index = match found {
        Some(i) => i,
        None => {
            if entries.len() >= ENTRIES
                && let Some((lru, _)) = entries.iter().enumerate().min_by_key(|(_, e)| e.used)
            {
                entries.swap_remove(lru);
            }
            entries.push(Entry::default());
            entries.len() - 1
        }
    };
    &mut entries[index]
}

/// Ends a comma-terminated item list as a JSON array's closing bracket.
pub fn close_array(out: &mut Vec<u8>) {
    match out.last_mut() {
        Some(last) if *last == b',' => *last = b']',
        _ => out.push(b']'),
    }
}

/// The last message and the user message before the last assistant message, newest first.
pub fn tail_breakpoints(messages: &[Message]) -> Vec<usize> {
    let Some(last) = messages.len().checked_sub(1) else {
        return Vec::new();
    };
    let mut out = vec![last];
    if let Some(prev) = messages[..last].iter().rposition(|m| m.role == Role::User)
        && messages[prev + 1..last].iter().any(|m| m.role == Role::Assistant)
    {
        out.push(prev);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::message::ContentBlock;

    fn enc(m: &Message, mark: bool, out: &mut Vec<u8>) -> Result<(), String> {
        let text = m.text();
        out.extend_from_slice(format!("\"{}{}\",", text, if mark { "*" } else { "" }).as_bytes());
        Ok(())
    }

    fn write(cache: &PrefixCache, msgs: &[Message], marked: &[usize]) -> (String, Reuse) {
        let mut out = b"[".to_vec();
        let r = cache.write("f", msgs, None, marked, &mut out, &mut enc).unwrap();
        close_array(&mut out);
        (String::from_utf8(out).unwrap(), r)
    }

    fn user(t: &str) -> Message {
        Message::user_text(t)
    }

    #[test]
    fn appends_reuse_the_prefix_and_marks_are_fresh() {
        let cache = PrefixCache::default();
        let mut msgs = vec![user("a"), Message::assistant(vec![ContentBlock::text("b")])];
        assert_eq!(write(&cache, &msgs, &[1]).0, r#"["a","b*"]"#);
        msgs.push(user("c"));
        let (body, reuse) = write(&cache, &msgs, &[2, 0]);
        assert_eq!(body, r#"["a*","b","c*"]"#);
        assert_eq!(reuse, Reuse { reused: 2, encoded: 1 });
        // The last message grew (user content merged into it): only it is encoded again.
        msgs[2].content.push(ContentBlock::text("d"));
        let (body, reuse) = write(&cache, &msgs, &[]);
        assert_eq!(body, r#"["a","b","cd"]"#);
        assert_eq!(reuse, Reuse { reused: 2, encoded: 1 });
        assert_eq!(write(&cache, &[], &[]).0, "[]");
    }

    #[test]
    fn a_changed_history_is_encoded_from_the_change() {
        let cache = PrefixCache::default();
        let msgs = vec![user("a"), user("b"), user("c")];
        write(&cache, &msgs, &[]);
        let changed = vec![user("a"), user("X"), user("c")];
        let (body, reuse) = write(&cache, &changed, &[]);
        assert_eq!(body, r#"["a","X","c"]"#);
        assert_eq!(reuse, Reuse { reused: 1, encoded: 2 });
        // A shorter history (compaction) is no problem either.
        assert_eq!(write(&cache, &changed[..1], &[]).0, r#"["a"]"#);
    }

    #[test]
    fn conversations_take_turns_without_thrashing() {
        let cache = PrefixCache::default();
        let main = vec![user("main"), user("m2")];
        let child = vec![user("child"), user("c2")];
        write(&cache, &main, &[]);
        write(&cache, &child, &[]);
        assert_eq!(write(&cache, &main, &[]).1, Reuse { reused: 2, encoded: 0 });
        assert_eq!(write(&cache, &child, &[]).1, Reuse { reused: 2, encoded: 0 });
        // The same input with its keys in another order encodes differently: not the same.
        let call = |input: serde_json::Value| {
            Message::assistant(vec![ContentBlock::ToolUse {
                id: "c".into(),
                name: "Read".into(),
                input,
            }])
        };
        let a: serde_json::Value = serde_json::from_str(r#"{"a": 1, "b": [1, {"c": 2}]}"#).unwrap();
        let b: serde_json::Value = serde_json::from_str(r#"{"b": [1, {"c": 2}], "a": 1}"#).unwrap();
        assert!(same_message(&call(a.clone()), &call(a.clone())));
        assert!(!same_message(&call(a), &call(b)));
        // A new flavor (another model's capabilities) starts over.
        let mut out = Vec::new();
        let r = cache.write("g", &main, None, &[], &mut out, &mut enc).unwrap();
        assert_eq!(r.reused, 0);
    }

    fn write_vouched(cache: &PrefixCache, msgs: &[Message], unchanged: Unchanged) -> String {
        let mut out = b"[".to_vec();
        cache
            .write("f", msgs, Some(unchanged), &[], &mut out, &mut enc)
            .unwrap();
        close_array(&mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn vouched_messages_are_reused_and_only_for_the_same_lineage() {
        let cache = PrefixCache::default();
        let mine = |len| Unchanged {
            lineage: (7, 1),
            after: (7, 1),
            len,
        };
        let msgs = vec![user("a"), user("b"), user("c")];
        assert_eq!(write_vouched(&cache, &msgs, mine(0)), r#"["a","b","c"]"#);
        let longer = vec![user("a"), user("b"), user("c"), user("d")];
        assert_eq!(write_vouched(&cache, &longer, mine(2)), r#"["a","b","c","d"]"#);
        // Another lineage (a sub-agent, a new generation) vouches for nothing here: the
        // changed message is found by comparing.
        let changed = vec![user("a"), user("X"), user("c"), user("d")];
        let other = Unchanged {
            lineage: (7, 2),
            after: (7, 2),
            len: 3,
        };
        assert_eq!(write_vouched(&cache, &changed, other), r#"["a","X","c","d"]"#);
        // A new generation that continues the last request (a frontier step kept its first
        // messages) vouches for them.
        let next = Unchanged {
            lineage: (7, 3),
            after: (7, 2),
            len: 2,
        };
        let stepped = vec![user("a"), user("X"), user("snip"), user("d")];
        assert_eq!(write_vouched(&cache, &stepped, next), r#"["a","X","snip","d"]"#);
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "vouched for messages that changed")]
    fn a_wrong_voucher_is_caught_in_debug_builds() {
        let cache = PrefixCache::default();
        let mine = |len| Unchanged {
            lineage: (7, 1),
            after: (7, 1),
            len,
        };
        write_vouched(&cache, &[user("a"), user("b")], mine(0));
        write_vouched(&cache, &[user("a"), user("X")], mine(2));
    }
}
