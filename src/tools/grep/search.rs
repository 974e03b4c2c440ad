//! The search engine behind Grep: ripgrep's crates (ignore + grep-searcher) on a parallel walk.
//!
//! Every file is opened below the walk's root without following links (`fsutil::open`), and
//! only regular files are searched. A search has a budget: the compiled pattern's size is
//! capped, and a deadline stops the walk and every file being read.

use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Instant, SystemTime};

use grep_matcher::Matcher;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind, SinkMatch};
use ignore::WalkState;
use tokio_util::sync::CancellationToken;

/// Lines longer than this are not printed (minified files would flood the context).
pub const MAX_COLUMNS: usize = 500;

/// Largest compiled pattern (the regex crate's own default; ripgrep's crates allow ten times
/// more, which lets a pattern such as `(a{1000}){100}` compile and then crawl).
pub const REGEX_SIZE_LIMIT: usize = 10 << 20;

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
    /// Where the search starts, as the permission check resolved it.
    pub root: PathBuf,
    /// How result paths begin (the path as the model gave it).
    pub display_root: PathBuf,
    /// The workspace roots (files below them are opened from their descriptor).
    pub roots: Vec<PathBuf>,
    /// When the search gives up.
    pub deadline: Instant,
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
    #[error("{0}")]
    Open(#[from] crate::fsutil::open::OpenError),
    #[error("the search ran out of time")]
    TimedOut,
    #[error("cancelled")]
    Cancelled,
}

pub fn build_matcher(q: &Query) -> Result<RegexMatcher, SearchError> {
    let mut b = RegexMatcherBuilder::new();
    b.case_insensitive(q.case_insensitive).size_limit(REGEX_SIZE_LIMIT);
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
    /// Directories not entered because an ignore file there is unsafe to read.
    pub skipped_dirs: usize,
}

pub fn search(q: &Query, cancel: &CancellationToken) -> Result<Outcome, SearchError> {
    if !q.root.exists() {
        return Err(SearchError::MissingPath(q.display_root.clone()));
    }
    let matcher = build_matcher(q)?;
    let root = Root::new(q)?;
    let timed_out = AtomicBool::new(false);
    let safe = crate::tools::walk::safe_walk(&q.root, |e| {
        !(e.file_type().is_some_and(|t| t.is_dir()) && VCS_DIRS.iter().any(|d| e.file_name() == *d))
    })
    .map_err(SearchError::Filter)?;
    let skipped_dirs = safe.skipped.clone();
    let mut walk = safe.builder;
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
    let threads = crate::fsutil::walk::cores().min(8);
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
        let root = &root;
        let timed_out = &timed_out;
        Box::new(move |entry| {
            if cancel.is_cancelled() {
                return WalkState::Quit;
            }
            if Instant::now() >= q.deadline {
                timed_out.store(true, Ordering::Relaxed);
                return WalkState::Quit;
            }
            let Ok(entry) = entry else {
                unreadable.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                return WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            // Below the root an entry typed as a file is no link (links are not followed, so a
            // link is typed as one); the root itself was typed through any link.
            let denied = if entry.depth() > 0 {
                q.guard.denies_regular(entry.path())
            } else {
                q.guard.denies(entry.path())
            };
            if denied {
                withheld.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                return WalkState::Continue;
            }
            let Some(file) = root.open(entry.path()) else {
                unreadable.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                return WalkState::Continue;
            };
            // A FIFO, socket or device (or a file swapped for one) is never read.
            let Ok(meta) = file.metadata() else {
                unreadable.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                return WalkState::Continue;
            };
            if !meta.is_file() {
                return WalkState::Continue;
            }
            let reader = Budgeted {
                file,
                deadline: q.deadline,
                cancel,
                timed_out,
            };
            let found = match search_file(&mut searcher, &matcher, reader, entry.path(), q) {
                Ok(found) => found,
                Err(_) if timed_out.load(Ordering::Relaxed) => return WalkState::Quit,
                Err(_) => {
                    unreadable.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    None
                }
            };
            if let Some(hits) = found {
                let mtime = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                let hits = FileHits { mtime, ..hits };
                results.lock().unwrap_or_else(|p| p.into_inner()).push(hits);
            }
            WalkState::Continue
        })
    });
    if timed_out.load(Ordering::Relaxed) {
        return Err(SearchError::TimedOut);
    }
    if cancel.is_cancelled() {
        return Err(SearchError::Cancelled);
    }
    Ok(Outcome {
        hits: results.into_inner().unwrap_or_else(|p| p.into_inner()),
        withheld: withheld.into_inner(),
        unreadable: unreadable.into_inner(),
        skipped_dirs: skipped_dirs.load(Ordering::Relaxed),
    })
}

/// The walk's root, open: files below it are opened from its descriptor with no link followed
/// (the walk itself follows none), so a directory swapped for a link mid-search leads nowhere.
enum Root {
    Dir {
        path: PathBuf,
        fd: OwnedFd,
    },
    /// `path` names one file, opened (and checked to be regular) up front.
    File(Mutex<Option<std::fs::File>>),
}

impl Root {
    fn new(q: &Query) -> Result<Root, SearchError> {
        use crate::fsutil::open::{self, OpenError};
        match open::directory(&q.root, &q.roots, false) {
            Ok(fd) => Ok(Root::Dir {
                path: q.root.clone(),
                fd,
            }),
            Err(OpenError::Io { source, .. }) if source.raw_os_error() == Some(libc::ENOTDIR) => {
                let opened = open::regular(&q.root, &q.roots)?;
                Ok(Root::File(Mutex::new(Some(opened.file))))
            }
            Err(OpenError::NotFound(_)) => Err(SearchError::MissingPath(q.display_root.clone())),
            Err(e) => Err(e.into()),
        }
    }

    fn open(&self, path: &Path) -> Option<std::fs::File> {
        match self {
            Root::File(f) => f.lock().unwrap_or_else(|p| p.into_inner()).take(),
            Root::Dir { path: root, fd } => {
                let rel = path.strip_prefix(root).ok()?;
                let flags = nix::fcntl::OFlag::O_RDONLY | nix::fcntl::OFlag::O_NONBLOCK;
                crate::fsutil::open::open_beneath(fd.as_fd(), rel, flags)
                    .ok()
                    .map(std::fs::File::from)
            }
        }
    }
}

/// A file reader that fails once the search's deadline has passed or it was cancelled, so a
/// slow pattern stops at the next chunk.
struct Budgeted<'a> {
    file: std::fs::File,
    deadline: Instant,
    cancel: &'a CancellationToken,
    timed_out: &'a AtomicBool,
}

impl std::io::Read for Budgeted<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.cancel.is_cancelled() {
            return Err(std::io::Error::other("cancelled"));
        }
        if Instant::now() >= self.deadline {
            self.timed_out.store(true, Ordering::Relaxed);
            return Err(std::io::Error::other("the search ran out of time"));
        }
        self.file.read(buf)
    }
}

/// Searches one file; `Err` when it could not be read (counted and reported by the caller).
fn search_file(
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    reader: Budgeted<'_>,
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
    searcher.search_reader(matcher, reader, &mut sink)?;
    if sink.binary || sink.matched_lines == 0 {
        return Ok(None);
    }
    let shown = match path.strip_prefix(&q.root) {
        Ok(rel) if !rel.as_os_str().is_empty() => q.display_root.join(rel),
        _ => q.display_root.clone(),
    };
    Ok(Some(FileHits {
        path: shown,
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
