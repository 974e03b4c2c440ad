//! The read-file state: what the model has actually seen of each file.
//!
//! Edit and Write consult it before touching disk: a file never read cannot be edited, a file
//! seen only in part cannot be overwritten whole, and a file that changed on disk since it was
//! read is not written over.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use sha2::{Digest, Sha256};

/// Snapshots above this size are not kept in memory (the conflict diff is then omitted).
pub const SNAPSHOT_LIMIT: usize = 1 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ViewKind {
    /// The model saw every line.
    Complete,
    /// A ranged or truncated read, or a file known only from a summary.
    Partial,
}

#[derive(Debug, Clone)]
pub struct FileView {
    pub hash: [u8; 32],
    pub size: u64,
    pub mtime: Option<SystemTime>,
    pub kind: ViewKind,
    pub seen_at: SystemTime,
    /// The content as the model saw it (small files only), for the conflict diff.
    pub snapshot: Option<Arc<str>>,
}

impl FileView {
    pub fn new(bytes: &[u8], mtime: Option<SystemTime>, kind: ViewKind) -> Self {
        Self::hashed(crate::checkpoint::Hashed::new(bytes), mtime, kind)
    }

    /// A view of content whose digest is known already (Edit and Write hash what they write
    /// once, for the checkpoint and this view alike).
    pub fn hashed(content: crate::checkpoint::Hashed<'_>, mtime: Option<SystemTime>, kind: ViewKind) -> Self {
        let bytes = content.bytes;
        let snapshot = (bytes.len() <= SNAPSHOT_LIMIT)
            .then(|| std::str::from_utf8(bytes).ok().map(Arc::from))
            .flatten();
        FileView {
            hash: content.digest,
            size: bytes.len() as u64,
            mtime,
            kind,
            seen_at: SystemTime::now(),
            snapshot,
        }
    }

    /// A view from a streamed read: the hash and size of the whole file, its content only when
    /// it is small (`snapshot`).
    pub fn streamed(
        hash: [u8; 32],
        size: u64,
        snapshot: Option<Arc<str>>,
        mtime: Option<SystemTime>,
        kind: ViewKind,
    ) -> Self {
        FileView {
            hash,
            size,
            mtime,
            kind,
            seen_at: SystemTime::now(),
            snapshot: snapshot.filter(|s| s.len() <= SNAPSHOT_LIMIT),
        }
    }

    pub fn is_complete(&self) -> bool {
        self.kind == ViewKind::Complete
    }
}

pub fn content_hash(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

#[derive(Debug, Clone, Default)]
pub struct FileStateMap {
    views: HashMap<PathBuf, FileView>,
}

impl FileStateMap {
    pub fn get(&self, path: &Path) -> Option<&FileView> {
        self.views.get(path)
    }

    /// Records a read. A partial view never downgrades a complete view of identical content.
    pub fn record(&mut self, path: PathBuf, view: FileView) {
        if view.kind == ViewKind::Partial
            && let Some(old) = self.views.get(&path)
            && old.is_complete()
            && old.hash == view.hash
        {
            return;
        }
        self.views.insert(path, view);
    }

    /// Downgrades every view to partial (after compaction the model knows files only from a
    /// summary).
    pub fn mark_all_partial(&mut self) {
        for v in self.views.values_mut() {
            v.kind = ViewKind::Partial;
        }
    }

    pub fn len(&self) -> usize {
        self.views.len()
    }

    pub fn is_empty(&self) -> bool {
        self.views.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&PathBuf, &FileView)> {
        self.views.iter()
    }
}

pub fn file_mtime(meta: &std::fs::Metadata) -> Option<SystemTime> {
    meta.modified().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_does_not_downgrade_identical_complete_view() {
        let mut m = FileStateMap::default();
        let p = PathBuf::from("/x");
        m.record(p.clone(), FileView::new(b"abc", None, ViewKind::Complete));
        m.record(p.clone(), FileView::new(b"abc", None, ViewKind::Partial));
        assert!(m.get(&p).unwrap().is_complete());
        m.record(p.clone(), FileView::new(b"abd", None, ViewKind::Partial));
        assert!(!m.get(&p).unwrap().is_complete());
    }
}
