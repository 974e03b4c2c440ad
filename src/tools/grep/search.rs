//! The search engine behind Grep: ripgrep's crates (ignore + grep-searcher) on a parallel walk.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use grep_matcher::Matcher;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind, SinkMatch};
use ignore::WalkState;
use tokio_util::sync::CancellationToken;

/// Lines longer than this are not printed (minified files would flood the context).
pub const MAX_COLUMNS: usize = 500;

/// Version-control directories never searched.
const VCS_DIRS: &[&str] = &[".git", ".svn", ".hg", ".bzr", ".jj", ".sl"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Files,
    Content,
    Count,
}

#[derive(Debug, Clone)]
pub struct Query {
    pub pattern: String,
    pub root: PathBuf,
    pub globs: Vec<String>,
    pub file_type: Option<String>,
    pub case_insensitive: bool,
    pub multiline: bool,
    pub before: usize,
    pub after: usize,
    pub only_matching: bool,
    pub mode: Mode,
    /// Files never searched (credential files, Read deny rules).
    pub guard: crate::tools::ReadGuard,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub number: u64,
    pub text: String,
    pub is_match: bool,
    /// A `--` separator precedes this line (non-contiguous context groups).
    pub break_before: bool,
}

#[derive(Debug, Clone)]
pub struct FileHits {
    pub path: PathBuf,
    pub mtime: SystemTime,
    pub matched_lines: u64,
    pub lines: Vec<Line>,
}

#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error("invalid regular expression: {0}")]
    Regex(String),
    #[error("{0}")]
    Filter(String),
    #[error("{0} does not exist")]
    MissingPath(PathBuf),
    #[error("cancelled")]
    Cancelled,
}

pub fn build_matcher(q: &Query) -> Result<RegexMatcher, SearchError> {
    let mut b = RegexMatcherBuilder::new();
    b.case_insensitive(q.case_insensitive);
    if q.multiline {
        b.multi_line(true).dot_matches_new_line(true);
    } else {
        b.line_terminator(Some(b'\n'));
    }
    b.build(&q.pattern).map_err(|e| SearchError::Regex(e.to_string()))
}

/// What a search found, and what it could not look at (said in the result, never hidden).
#[derive(Debug, Default)]
pub struct Outcome {
    pub hits: Vec<FileHits>,
    /// Files the read guard kept out (credential files, Read deny rules).
    pub withheld: usize,
    /// Directory entries or files that could not be read (permissions, I/O errors).
    pub unreadable: usize,
}

pub fn search(q: &Query, cancel: &CancellationToken) -> Result<Outcome, SearchError> {
    if !q.root.exists() {
        return Err(SearchError::MissingPath(q.root.clone()));
    }
    let matcher = build_matcher(q)?;
    let mut walk = ignore::WalkBuilder::new(&q.root);
    walk.hidden(false)
        .require_git(false)
        .filter_entry(|e| !(e.file_type().is_some_and(|t| t.is_dir()) && VCS_DIRS.iter().any(|d| e.file_name() == *d)));
    if !q.globs.is_empty() {
        let mut ob = ignore::overrides::OverrideBuilder::new(&q.root);
        for g in &q.globs {
            ob.add(g)
                .map_err(|e| SearchError::Filter(format!("invalid glob `{g}`: {e}")))?;
        }
        walk.overrides(ob.build().map_err(|e| SearchError::Filter(e.to_string()))?);
    }
    if let Some(t) = &q.file_type {
        let mut tb = ignore::types::TypesBuilder::new();
        tb.add_defaults();
        tb.select(t);
        let types = tb
            .build()
            .map_err(|e| SearchError::Filter(format!("unknown file type `{t}`: {e}")))?;
        walk.types(types);
    }
    let results: Mutex<Vec<FileHits>> = Mutex::new(Vec::new());
    let withheld = std::sync::atomic::AtomicUsize::new(0);
    let unreadable = std::sync::atomic::AtomicUsize::new(0);
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .min(8);
    walk.threads(threads).build_parallel().run(|| {
        let matcher = matcher.clone();
        let mut searcher = SearcherBuilder::new()
            .line_number(true)
            .multi_line(q.multiline)
            .before_context(if q.mode == Mode::Content { q.before } else { 0 })
            .after_context(if q.mode == Mode::Content { q.after } else { 0 })
            .binary_detection(BinaryDetection::quit(0))
            .build();
        let results = &results;
        let withheld = &withheld;
        let unreadable = &unreadable;
        Box::new(move |entry| {
            if cancel.is_cancelled() {
                return WalkState::Quit;
            }
            let Ok(entry) = entry else {
                unreadable.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                return WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            if q.guard.denies(entry.path()) {
                withheld.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                return WalkState::Continue;
            }
            let found = match search_file(&mut searcher, &matcher, entry.path(), q) {
                Ok(found) => found,
                Err(_) => {
                    unreadable.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    None
                }
            };
            if let Some(hits) = found {
                let mtime = entry
                    .metadata()
                    .ok()
                    .and_then(|m| m.modified().ok())
                    .unwrap_or(SystemTime::UNIX_EPOCH);
                let hits = FileHits { mtime, ..hits };
                results.lock().unwrap_or_else(|p| p.into_inner()).push(hits);
            }
            WalkState::Continue
        })
    });
    if cancel.is_cancelled() {
        return Err(SearchError::Cancelled);
    }
    Ok(Outcome {
        hits: results.into_inner().unwrap_or_else(|p| p.into_inner()),
        withheld: withheld.into_inner(),
        unreadable: unreadable.into_inner(),
    })
}

/// Searches one file; `Err` when it could not be read (counted and reported by the caller).
fn search_file(
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    path: &Path,
    q: &Query,
) -> std::io::Result<Option<FileHits>> {
    let mut sink = Collect {
        matcher,
        mode: q.mode,
        only_matching: q.only_matching,
        lines: Vec::new(),
        matched_lines: 0,
        pending_break: false,
        binary: false,
    };
    searcher.search_path(matcher, path, &mut sink)?;
    if sink.binary || sink.matched_lines == 0 {
        return Ok(None);
    }
    Ok(Some(FileHits {
        path: path.to_path_buf(),
        mtime: SystemTime::UNIX_EPOCH,
        matched_lines: sink.matched_lines,
        lines: sink.lines,
    }))
}

struct Collect<'m> {
    matcher: &'m RegexMatcher,
    mode: Mode,
    only_matching: bool,
    lines: Vec<Line>,
    matched_lines: u64,
    pending_break: bool,
    binary: bool,
}

impl Collect<'_> {
    fn push(&mut self, number: u64, bytes: &[u8], is_match: bool) {
        let text = String::from_utf8_lossy(bytes);
        let text = text.trim_end_matches('\n').trim_end_matches('\r');
        let text = if text.chars().count() > MAX_COLUMNS {
            format!("[line of {} characters not shown]", text.chars().count())
        } else {
            text.to_string()
        };
        self.lines.push(Line {
            number,
            text,
            is_match,
            break_before: std::mem::take(&mut self.pending_break),
        });
    }
}

impl Sink for Collect<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _s: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        let first = mat.line_number().unwrap_or(0);
        let count = mat.lines().count().max(1) as u64;
        self.matched_lines += count;
        match self.mode {
            Mode::Files => return Ok(false),
            Mode::Count => return Ok(true),
            Mode::Content => {}
        }
        if self.only_matching {
            let bytes = mat.bytes();
            let mut pieces = Vec::new();
            let _ = self.matcher.find_iter(bytes, |m| {
                pieces.push(bytes[m].to_vec());
                true
            });
            for p in pieces {
                self.push(first, &p, true);
            }
        } else {
            for (i, line) in mat.lines().enumerate() {
                self.push(first + i as u64, line, true);
            }
        }
        Ok(true)
    }

    fn context(&mut self, _s: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, Self::Error> {
        if matches!(ctx.kind(), SinkContextKind::Other) {
            return Ok(true);
        }
        self.push(ctx.line_number().unwrap_or(0), ctx.bytes(), false);
        Ok(true)
    }

    fn context_break(&mut self, _s: &Searcher) -> Result<bool, Self::Error> {
        self.pending_break = true;
        Ok(true)
    }

    fn binary_data(&mut self, _s: &Searcher, _offset: u64) -> Result<bool, Self::Error> {
        self.binary = true;
        Ok(false)
    }
}
