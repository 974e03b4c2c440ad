//! The compactor: keeps the request view of the history and decides when tiers run.
//!
//! The view has a cold part (store messages before the *frontier*, with tiers 2–4 applied) and
//! a hot part (everything after it, verbatim). The frontier only moves in steps — when the hot
//! part holds too many exchanges or too many tokens. Between steps every request repeats the
//! previous one byte for byte and appends to it, so the provider's prompt cache keeps hitting,
//! and building a request costs a copy of the new messages only.
//!
//! A step leaves the cold part that earlier requests sent as it is and applies the tiers to the
//! messages that just became cold (with evidence from the whole history): what was sent stays
//! byte-stable, the cache is rewritten only from the old frontier on, and a step costs the new
//! part rather than the whole history. Only [`Compactor::squeeze`], the step before
//! autocompaction, re-runs the tiers over everything, where the last tokens matter more than
//! the cache.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::breaker::Breaker;
use super::view::View;
use super::{Memo, TierContext, calls::CallIndex, collapse, microcompact, snip};
pub use crate::context::assemble::Anchors;
use crate::context::tokens::{self, TokenCounter, Window};
use crate::provider::prefix::Unchanged;
use crate::tools::kinds::KindTable;
use crate::types::message::{Message, Role};

/// When the frontier moves.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ViewPolicy {
    /// The newest exchanges always stay verbatim.
    pub hot_min: usize,
    /// The frontier moves when more exchanges than this are verbatim...
    pub hot_max: usize,
    /// ... or when the verbatim part exceeds this percentage of the input budget.
    pub hot_share_pct: u8,
}

impl Default for ViewPolicy {
    fn default() -> Self {
        // Small steps, often: a step rewrites only the newly cold messages (the part sent
        // before stays as it was), so consumed results can turn into placeholders soon without
        // costing the cache the whole history (docs/PERFORMANCE.md, prompt caching).
        ViewPolicy {
            hot_min: 2,
            hot_max: 8,
            hot_share_pct: 30,
        }
    }
}

/// Compaction settings of a session.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompactSettings {
    /// Tiers 2–4 shape the request view.
    pub view_tiers: bool,
    /// Tier 5 runs when the context nears the window.
    pub auto: bool,
    /// Autocompaction starts at this percentage of the input budget.
    pub threshold_pct: u8,
}

impl Default for CompactSettings {
    fn default() -> Self {
        CompactSettings {
            view_tiers: true,
            auto: true,
            threshold_pct: 85,
        }
    }
}

/// The view for one request.
#[derive(Debug, Clone)]
pub struct RequestView {
    pub messages: Arc<Vec<Message>>,
    /// Changes whenever the cold part changes (usage of an older generation is stale).
    pub generation: u64,
    /// Estimated tokens of the whole request (system and tools included).
    pub tokens: u64,
    /// Where the view's stable prefixes end, for prompt-cache breakpoints.
    pub anchors: Anchors,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct CompactStats {
    /// Request views built.
    pub views: u64,
    /// Times the cold part was rebuilt (the frontier moved).
    pub rebuilds: u64,
    /// Time spent building views and noting tool rounds (record, instruction files).
    pub time: Duration,
    /// CPU time of the same work (without waiting for spill files to reach the disk).
    pub cpu: Duration,
    /// The part of `cpu` spent rebuilding the cold part when the frontier moved.
    pub rebuild_cpu: Duration,
    /// Times the cold part was built whole again between squeezes (see `consolidate`).
    pub consolidations: u64,
    /// Times the assembled view had to be copied because an earlier request still held it.
    pub view_copies: u64,
}

/// Measures wall and CPU time of a piece of compactor work.
pub struct Timer {
    wall: Instant,
    cpu: Duration,
}

impl Timer {
    pub fn start() -> Timer {
        Timer {
            wall: Instant::now(),
            cpu: thread_cpu(),
        }
    }

    pub fn stop(self, stats: &mut CompactStats) {
        stats.time += self.wall.elapsed();
        stats.cpu += thread_cpu().saturating_sub(self.cpu);
    }
}

/// CPU time of the current thread (zero where the clock is unavailable, and when debug
/// records are off: the figure is only ever shown in them, and the clock is a system call,
/// two for every view built).
fn thread_cpu() -> Duration {
    if tracing::level_filters::LevelFilter::current() < tracing::Level::DEBUG {
        return Duration::ZERO;
    }
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map(Duration::from)
        .unwrap_or_default()
}

#[derive(Debug, Default)]
struct Cold {
    /// Store index of the first hot message (0: no cold part).
    upto: usize,
    view: View,
    /// Leading view messages that the requests before the last step sent as they are now.
    kept: usize,
    /// Built in more than one step (a rebuild over everything could shape it further).
    stepped: bool,
    /// Estimated tokens of the cold part when it was last built whole.
    base_tokens: u64,
    /// Estimated tokens of the cold part now (kept as it grows, so a step does not count
    /// the whole history again).
    tokens: u64,
}

/// Messages the history grows by, at least, before another squeeze (see `squeeze_due`).
const MIN_SQUEEZE_GROWTH: usize = 8;

/// Below this size a cold part is not worth rebuilding whole between squeezes.
const CONSOLIDATE_MIN_TOKENS: u64 = 4_000;

/// How many leading messages two views share.
fn common_prefix(a: &[Message], b: &[Message]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

#[derive(Debug)]
struct Built {
    view: Arc<Vec<Message>>,
    /// Store messages the built view reflects.
    synced: usize,
}

pub struct Compactor {
    pub window: Window,
    pub settings: CompactSettings,
    pub policy: ViewPolicy,
    pub counter: TokenCounter,
    pub breaker: Breaker,
    pub stats: CompactStats,
    /// Estimated tokens of the system prompt and tool definitions.
    fixed_tokens: u64,
    cold: Cold,
    generation: u64,
    built: Option<Built>,
    memo: std::cell::RefCell<Memo>,
    /// This conversation's name in the providers' encoding caches.
    lineage: u64,
    /// The generation and length of the view the last request was built from.
    sent: Option<(u64, usize)>,
    /// The history revision the view follows (a replaced history starts a new view).
    revision: u64,
    /// What the session's tools declare (the engine keeps it in step with the registry).
    pub kinds: KindTable,
    /// Store length at the last squeeze (see [`Compactor::squeeze_due`]).
    squeezed_at: Option<usize>,
    /// Leading view messages that every step since the last request kept as that request had
    /// them (`usize::MAX`: no step since).
    kept_since_sent: usize,
}

impl Compactor {
    pub fn new(window: Window, settings: CompactSettings) -> Self {
        Compactor {
            window,
            settings,
            policy: ViewPolicy::default(),
            counter: TokenCounter::default(),
            breaker: Breaker::default(),
            stats: CompactStats::default(),
            fixed_tokens: 0,
            cold: Cold::default(),
            generation: 0,
            built: None,
            memo: Default::default(),
            lineage: fastrand::u64(..),
            sent: None,
            revision: 0,
            kinds: KindTable::default(),
            squeezed_at: None,
            kept_since_sent: usize::MAX,
        }
    }

    /// Notes that a request is built from `view`: whether its cold part changed since the
    /// previous request (so that request's tail is no cache prefix of this one), and how many
    /// of its leading messages are the previous request's.
    pub fn sending(&mut self, view: &RequestView) -> Sending {
        self.counter.sent(view.generation, view.messages.len());
        let len = view.messages.len();
        let previous = self.sent.replace((view.generation, len));
        let same = previous.filter(|(g, _)| *g == view.generation);
        let kept = std::mem::replace(&mut self.kept_since_sent, usize::MAX);
        // Within a generation the view only grows at its end, where the last message may have
        // taken more content since; a frontier step keeps the leading messages it says it kept.
        let continued = match (previous, same) {
            // A view taken before a later step is no continuation of anything sent.
            _ if view.generation != self.generation => 0,
            (_, Some((_, l))) => l.saturating_sub(1),
            (Some((_, l)), None) => kept.min(l.saturating_sub(1)),
            (None, None) => 0,
        };
        Sending {
            moved: same.is_none(),
            unchanged: Unchanged {
                lineage: (self.lineage, view.generation),
                after: (self.lineage, previous.map_or(view.generation, |(g, _)| g)),
                len: continued.min(len),
            },
        }
    }

    /// Follows the history's revision: a replaced history (compaction, rewind, resume) starts
    /// a new view even when it is as long as the old one.
    pub fn follow(&mut self, revision: u64) {
        if revision != self.revision {
            self.revision = revision;
            self.reset();
        }
    }

    pub fn set_fixed_tokens(&mut self, tokens: u64) {
        self.fixed_tokens = tokens;
    }

    pub fn fixed_tokens(&self) -> u64 {
        self.fixed_tokens
    }

    /// Where autocompaction starts.
    pub fn threshold(&self) -> u64 {
        self.window.threshold(self.settings.threshold_pct)
    }

    /// Whether the view last assembled may not fit the window's input budget once the
    /// estimate's usual shortfall against the provider's count is added.
    pub fn may_overflow(&self) -> bool {
        self.counter.with_margin() >= self.window.input_budget()
    }

    /// The output limit of a request: the configured one, but never more than the window keeps
    /// free for the answer when the window is small.
    pub fn request_max_tokens(&self, configured: u32) -> u32 {
        let quarter = (self.window.total / 4).min(u32::MAX as u64) as u32;
        configured.min(quarter.max(1))
    }

    /// Store index where the cold part ends.
    pub fn frontier(&self) -> usize {
        self.cold.upto
    }

    /// Forgets the view (the history was replaced: compaction, resume).
    pub fn reset(&mut self) {
        self.cold = Cold::default();
        self.built = None;
        self.generation += 1;
        self.counter.reset();
        self.memo = Default::default();
        self.squeezed_at = None;
        self.kept_since_sent = 0;
    }

    /// The view for the next request, moving the frontier first when the hot part grew too big.
    pub fn view(&mut self, store: &Arc<Vec<Message>>, session_dir: &Path) -> RequestView {
        let timer = Timer::start();
        if store.len() < self.cold.upto || self.built.as_ref().is_some_and(|b| b.synced > store.len()) {
            self.reset();
        }
        if self.settings.view_tiers && self.hot_too_big(store) {
            self.advance(store, session_dir, self.policy.hot_min, Step::Extend);
        }
        let view = self.assemble(store);
        self.stats.views += 1;
        timer.stop(&mut self.stats);
        view
    }

    /// Whether a squeeze re-runs the tiers over the whole cold part: not when the last one was
    /// so recent that the history grew by less than a sixteenth since. Near the window each
    /// new exchange crosses the threshold again, and rebuilding the whole history for the
    /// little that became cold since would cost the history on every turn; such a squeeze
    /// moves the frontier as a step does.
    pub fn squeeze_due(&self, store_len: usize) -> bool {
        self.squeezed_at
            .is_none_or(|at| store_len >= at + (at / 16).max(MIN_SQUEEZE_GROWTH))
    }

    /// Moves the frontier as far as it goes (only the newest exchange stays verbatim) and
    /// returns the view; the step before autocompaction.
    pub fn squeeze(&mut self, store: &Arc<Vec<Message>>, session_dir: &Path) -> RequestView {
        let timer = Timer::start();
        // Not due: only the exchanges that became cold since go through the tiers (what a
        // step costs); the whole history is shaped again once it has grown enough.
        let step = if self.squeeze_due(store.len()) {
            self.squeezed_at = Some(store.len());
            Step::Rebuild
        } else {
            Step::Extend
        };
        if self.settings.view_tiers {
            self.advance(store, session_dir, 1, step);
        }
        let view = self.assemble(store);
        timer.stop(&mut self.stats);
        view
    }

    fn hot_too_big(&self, store: &[Message]) -> bool {
        let hot = &store[self.cold.upto..];
        let exchanges = hot.iter().filter(|m| m.role == Role::Assistant).count();
        if exchanges <= self.policy.hot_min {
            return false;
        }
        exchanges > self.policy.hot_max
            || tokens::messages(hot) > self.window.input_budget() * self.policy.hot_share_pct as u64 / 100
    }

    /// Moves the frontier so that `keep` exchanges stay verbatim: the tiers run over the newly
    /// cold messages (`Step::Extend`) or over the whole cold part (`Step::Rebuild`).
    fn advance(&mut self, store: &Arc<Vec<Message>>, session_dir: &Path, keep: usize, step: Step) {
        // The `keep`-th exchange from the end, found from the end: a step costs the hot part.
        let Some(upto) = store
            .iter()
            .enumerate()
            .rev()
            .filter(|(_, m)| m.role == Role::Assistant)
            .nth(keep.max(1) - 1)
            .map(|(i, _)| i)
        else {
            return;
        };
        // A rebuild also catches up on what steps left alone (calls in the part sent before a
        // step that later calls superseded), even where the frontier stays.
        let upto = match step {
            Step::Rebuild if self.cold.stepped => upto.max(self.cold.upto),
            _ => upto,
        };
        if upto <= self.cold.upto && !(step == Step::Rebuild && self.cold.stepped) {
            return;
        }
        let before = thread_cpu();
        let sent_len = self.cold.view.len();
        let from = match step {
            Step::Extend => self.cold.upto,
            Step::Rebuild => 0,
        };
        let part = cold_view(store, from..upto, session_dir, &self.memo, &self.kinds);
        if from == 0 {
            let kept = common_prefix(&self.cold.view.messages, &part.messages);
            let whole = tokens::messages(&part.messages);
            self.cold = Cold {
                upto,
                base_tokens: whole,
                tokens: whole,
                view: part,
                kept,
                stepped: false,
            };
            self.built = None;
        } else {
            let kept = self.cold.view.len();
            self.cold.kept = kept;
            self.cold.tokens += tokens::messages(&part.messages);
            self.cold.view.extend(part);
            self.cold.upto = upto;
            self.cold.stepped = true;
            if self.consolidate(store, session_dir) {
                self.built = None;
            } else if let Some(built) = &mut self.built {
                // The view sent so far starts with the cold part as it was: it keeps that
                // and takes the newly cold messages in place of their verbatim originals
                // (dropping and copying the whole view at every step grew with the history).
                if Arc::strong_count(&built.view) > 1 {
                    self.stats.view_copies += 1;
                }
                let v = Arc::make_mut(&mut built.view);
                v.truncate(kept);
                v.extend_from_slice(&self.cold.view.messages[kept..]);
                built.synced = upto;
            }
        }
        self.kept_since_sent = self.kept_since_sent.min(self.cold.kept.min(sent_len));
        self.stats.rebuild_cpu += thread_cpu().saturating_sub(before);
        self.generation += 1;
        self.stats.rebuilds += 1;
    }

    /// Steps leave calls that later calls superseded in the part sent before; once the cold
    /// part has grown by half since it was last built whole, it is built whole again and taken
    /// when that saves a tenth of it. The cache keeps the prefix both share; the growth rule
    /// keeps the rebuilds few (their total cost stays proportional to the history).
    /// Returns whether the cold part was replaced.
    fn consolidate(&mut self, store: &Arc<Vec<Message>>, session_dir: &Path) -> bool {
        let now = self.cold.tokens;
        if now < CONSOLIDATE_MIN_TOKENS || now < self.cold.base_tokens.saturating_mul(3) / 2 {
            return false;
        }
        let whole = cold_view(store, 0..self.cold.upto, session_dir, &self.memo, &self.kinds);
        let whole_tokens = tokens::messages(&whole.messages);
        self.stats.consolidations += 1;
        if whole_tokens.saturating_mul(10) <= now.saturating_mul(9) {
            self.cold.kept = common_prefix(&self.cold.view.messages, &whole.messages);
            self.cold.view = whole;
            self.cold.stepped = false;
            self.cold.base_tokens = whole_tokens;
            self.cold.tokens = whole_tokens;
            true
        } else {
            self.cold.base_tokens = now;
            false
        }
    }

    /// Cold part plus the hot messages, appended to the previous request's view when possible.
    fn assemble(&mut self, store: &Arc<Vec<Message>>) -> RequestView {
        let messages = if self.cold.upto == 0 {
            store.clone()
        } else {
            let built = self.built.get_or_insert_with(|| Built {
                view: Arc::new(self.cold.view.messages.clone()),
                synced: self.cold.upto,
            });
            // The last synced message may have grown since (user content merged into it).
            let from = built.synced.saturating_sub(1).max(self.cold.upto);
            let keep = self.cold.view.len() + (from - self.cold.upto);
            if Arc::strong_count(&built.view) > 1 {
                // Still held by an earlier request: `make_mut` copies the whole view.
                self.stats.view_copies += 1;
            }
            let v = Arc::make_mut(&mut built.view);
            v.truncate(keep);
            v.extend(store[from..].iter().cloned());
            built.synced = store.len();
            built.view.clone()
        };
        // The view kept across steps must be what building it afresh would give.
        debug_assert!(
            self.cold.upto == 0
                || (messages.get(..self.cold.view.len()) == Some(&self.cold.view.messages[..])
                    && messages.get(self.cold.view.len()..) == store.get(self.cold.upto..)),
            "the assembled view drifted from its cold part and the store"
        );
        let cold = (self.cold.view.len(), self.cold.tokens);
        let tokens = self
            .counter
            .count_after(self.generation, self.fixed_tokens, &messages, cold);
        let end = |len: usize| len.checked_sub(1).filter(|_| self.cold.upto > 0);
        RequestView {
            messages,
            generation: self.generation,
            tokens,
            anchors: Anchors {
                cold_end: end(self.cold.view.len()),
                kept_end: end(self.cold.kept),
            },
        }
    }
}

/// What [`Compactor::sending`] tells the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sending {
    pub moved: bool,
    pub unchanged: Unchanged,
}

/// How a frontier move treats the cold part that is already there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Keep it as sent; the tiers shape only the messages that became cold.
    Extend,
    /// Re-run the tiers over the whole cold part.
    Rebuild,
}

/// Tiers 2, 3 and 4, in that order, over `store[range]` (evidence from the whole store).
pub fn cold_view(
    store: &[Message],
    range: std::ops::Range<usize>,
    session_dir: &Path,
    memo: &std::cell::RefCell<Memo>,
    kinds: &KindTable,
) -> View {
    let index = CallIndex::build_from(store, range.start);
    let ctx = TierContext {
        store,
        index: &index,
        from: range.start,
        upto: range.end,
        session_dir,
        memo,
        kinds,
    };
    let mut view = View::identity(&store[range.clone()], range.start);
    let snips = snip::superseded(&ctx);
    snip::apply(&mut view, &ctx, &snips);
    microcompact::apply(&mut view, &ctx);
    collapse::apply(&mut view, &ctx);
    view
}
