//! The watcher's map of the tree: every directory the walk entered, its watch, and the names in
//! it the snapshot holds, so a removed or moved directory takes exactly its files out of the
//! snapshot (no scan of the whole map) and an event's watch names its directory.

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use nix::sys::inotify::WatchDescriptor;

use crate::workspace::snapshot::{Fallback, Snapshot, Stamp};

#[derive(Debug)]
struct Node {
    wd: WatchDescriptor,
    /// Files and directories in it that the snapshot holds.
    names: HashSet<OsString>,
}

/// Watched directories by path relative to the root (`""` is the root) and by watch.
#[derive(Debug, Default)]
pub(super) struct Tree {
    dirs: HashMap<PathBuf, Node>,
    wds: HashMap<WatchDescriptor, PathBuf>,
}

impl Tree {
    /// The tree a walk found: its directories with their watches (the root's first) and files.
    pub(super) fn build(
        root: WatchDescriptor,
        mut dirs: Vec<(PathBuf, WatchDescriptor)>,
        files: &[(PathBuf, Stamp)],
    ) -> Result<Tree, Fallback> {
        let mut tree = Tree::default();
        tree.add_dir(PathBuf::new(), root)?;
        // Parents before children.
        dirs.sort_by_key(|(p, _)| p.components().count());
        for (rel, wd) in dirs {
            tree.add_dir(rel, wd)?;
        }
        for (rel, _) in files {
            tree.add_name(rel)?;
        }
        Ok(tree)
    }

    pub(super) fn dir_of(&self, wd: WatchDescriptor) -> Option<&Path> {
        self.wds.get(&wd).map(PathBuf::as_path)
    }

    pub(super) fn is_dir(&self, rel: &Path) -> bool {
        self.dirs.contains_key(rel)
    }

    pub(super) fn is_root(&self, wd: WatchDescriptor) -> bool {
        self.dirs.get(Path::new("")).is_some_and(|n| n.wd == wd)
    }

    pub(super) fn watches(&self) -> impl Iterator<Item = WatchDescriptor> + '_ {
        self.wds.keys().copied()
    }

    pub(super) fn watch_count(&self) -> usize {
        self.wds.len()
    }

    /// A directory found by a walk, with its watch. A watch that already stands for another
    /// directory still in the tree means one directory under two paths (a bind mount), and a
    /// known directory with another watch one replaced unseen: either way the watcher could
    /// not tell what an event meant.
    pub(super) fn add_dir(&mut self, rel: PathBuf, wd: WatchDescriptor) -> Result<(), Fallback> {
        match self.dirs.get(&rel) {
            Some(node) if node.wd == wd => return Ok(()),
            Some(_) => return Err(Fallback::Uncertain),
            None => {}
        }
        if let Some(other) = self.wds.get(&wd)
            && self.dirs.get(other).is_some_and(|n| n.wd == wd)
        {
            return Err(Fallback::Uncertain);
        }
        if !rel.as_os_str().is_empty() {
            self.add_name(&rel)?;
        }
        self.wds.insert(wd, rel.clone());
        self.dirs.insert(
            rel,
            Node {
                wd,
                names: HashSet::new(),
            },
        );
        Ok(())
    }

    /// Notes `rel` (a file or directory) in its parent, which must be a watched directory.
    pub(super) fn add_name(&mut self, rel: &Path) -> Result<(), Fallback> {
        let (Some(parent), Some(name)) = (rel.parent(), rel.file_name()) else {
            return Err(Fallback::Uncertain);
        };
        match self.dirs.get_mut(parent) {
            Some(node) => {
                node.names.insert(name.to_os_string());
                Ok(())
            }
            None => Err(Fallback::Uncertain),
        }
    }

    /// The kernel dropped a watch (its directory is gone): events can no longer name it.
    pub(super) fn forget(&mut self, wd: WatchDescriptor) {
        self.wds.remove(&wd);
    }

    /// Takes `rel` and everything below it out of the tree and the snapshot (and out of
    /// `linked`); the watches of the directories removed go to `orphans` (a moved directory's
    /// watch comes back when the walk finds it at its new path).
    pub(super) fn remove(
        &mut self,
        rel: &Path,
        snap: &mut Snapshot,
        linked: &mut HashSet<PathBuf>,
        orphans: &mut HashSet<WatchDescriptor>,
    ) {
        if let (Some(parent), Some(name)) = (rel.parent(), rel.file_name())
            && let Some(node) = self.dirs.get_mut(parent)
        {
            node.names.remove(name);
        }
        let mut stack = vec![rel.to_path_buf()];
        while let Some(path) = stack.pop() {
            match self.dirs.remove(&path) {
                Some(node) => {
                    if self.wds.get(&node.wd) == Some(&path) {
                        self.wds.remove(&node.wd);
                    }
                    orphans.insert(node.wd);
                    stack.extend(node.names.into_iter().map(|n| path.join(n)));
                }
                None => {
                    snap.set(&path, None);
                    linked.remove(&path);
                }
            }
        }
    }

    /// A watch a walk handed out again (the directory moved within the tree): not an orphan.
    pub(super) fn reclaimed(&self, orphans: &mut HashSet<WatchDescriptor>) {
        orphans.retain(|wd| !self.wds.contains_key(wd));
    }
}
