//! The request *view*: the messages the model is sent, each tied to the stored messages it
//! stands for. Tiers 2–4 change the view; the store (the session history and the transcript)
//! stays complete.
//!
//! The mapping is explicit: every view message carries the contiguous range of store messages
//! it represents, ranges follow each other without gaps, and together they cover the store.

use std::ops::Range;

use crate::types::message::Message;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OriginKind {
    /// The stored message, unchanged.
    Verbatim,
    /// The stored message with some blocks snipped or replaced by placeholders (tiers 2, 3).
    Edited,
    /// Several stored messages: the first (edited or not) plus folded segments after it (tier 4).
    Folded,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub store: Range<usize>,
    pub kind: OriginKind,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct View {
    pub messages: Vec<Message>,
    pub origins: Vec<Origin>,
}

impl View {
    /// The view that shows `store[offset..]` unchanged, with origins counted from `offset`.
    pub fn identity(store: &[Message], offset: usize) -> View {
        View {
            messages: store.to_vec(),
            origins: (0..store.len())
                .map(|i| Origin {
                    store: offset + i..offset + i + 1,
                    kind: OriginKind::Verbatim,
                })
                .collect(),
        }
    }

    pub fn len(&self) -> usize {
        self.messages.len()
    }

    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// The store messages view message `i` stands for.
    pub fn store_range(&self, i: usize) -> Option<Range<usize>> {
        self.origins.get(i).map(|o| o.store.clone())
    }

    /// The view message that shows (or folds) store message `s`.
    pub fn view_index(&self, s: usize) -> Option<usize> {
        let i = self.origins.partition_point(|o| o.store.end <= s);
        self.origins.get(i).filter(|o| o.store.contains(&s)).map(|_| i)
    }

    /// Marks view message `i` as changed from its stored form.
    pub fn mark_edited(&mut self, i: usize) {
        if let Some(o) = self.origins.get_mut(i)
            && o.kind == OriginKind::Verbatim
        {
            o.kind = OriginKind::Edited;
        }
    }

    /// Appends `other` (which must continue where this view's store range ends).
    pub fn extend(&mut self, other: View) {
        self.messages.extend(other.messages);
        self.origins.extend(other.origins);
    }

    /// Checks the mapping: ranges non-empty, in order, without gaps, covering `store_len`
    /// messages from `offset`; messages and origins of equal number.
    pub fn check(&self, offset: usize, store_len: usize) -> Result<(), String> {
        if self.messages.len() != self.origins.len() {
            return Err(format!(
                "{} messages but {} origins",
                self.messages.len(),
                self.origins.len()
            ));
        }
        let mut next = offset;
        for (i, o) in self.origins.iter().enumerate() {
            if o.store.start != next || o.store.is_empty() {
                return Err(format!(
                    "view message {i} maps to {:?}, expected to start at {next}",
                    o.store
                ));
            }
            next = o.store.end;
        }
        if next != offset + store_len {
            return Err(format!(
                "the view covers store messages up to {next} of {}",
                offset + store_len
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_maps_one_to_one_and_lookups_agree() {
        let store = [
            Message::user_text("a"),
            Message::user_text("b"),
            Message::user_text("c"),
        ];
        let v = View::identity(&store[1..], 1);
        assert_eq!(v.store_range(0), Some(1..2));
        assert_eq!(v.view_index(2), Some(1));
        assert_eq!(v.view_index(0), None);
        assert!(v.check(1, 2).is_ok());
        assert!(v.check(0, 3).is_err());
    }

    #[test]
    fn folded_ranges_are_found_and_gaps_rejected() {
        let v = View {
            messages: vec![Message::user_text("a"), Message::user_text("b")],
            origins: vec![
                Origin {
                    store: 0..4,
                    kind: OriginKind::Folded,
                },
                Origin {
                    store: 4..5,
                    kind: OriginKind::Verbatim,
                },
            ],
        };
        assert!(v.check(0, 5).is_ok());
        assert_eq!(v.view_index(3), Some(0));
        assert_eq!(v.view_index(4), Some(1));
        assert_eq!(v.view_index(5), None);
        let mut gap = v.clone();
        gap.origins[1].store = 5..6;
        assert!(gap.check(0, 6).unwrap_err().contains("expected to start at 4"));
    }
}
