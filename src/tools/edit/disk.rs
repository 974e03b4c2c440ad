//! The disk side of Edit and Write: the file is opened exactly where the permission check
//! resolved it (a symbolic link's target; the link stays), read with a size cap from a regular
//! file only, and replaced atomically in that same directory, through its descriptor.

use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::guard;
use crate::fsutil::open::{self, OpenError};
use crate::fsutil::replace::{self, Options, Replace, ReplaceError};
use crate::tools::{ToolError, paths};

/// A file that exists: its bytes (at most the size cap) and its identity.
pub struct Existing {
    pub bytes: Vec<u8>,
    pub meta: Metadata,
}

/// Loads the file to change; `None` when it does not exist. `real` is the resolved path.
pub fn load(path: &Path, real: &Path, roots: &[PathBuf], tool: &str) -> Result<Option<Existing>, ToolError> {
    let mut opened = match open::regular(real, roots) {
        Ok(o) => o,
        Err(OpenError::NotFound(_)) => return Ok(None),
        Err(OpenError::Directory(_)) => {
            return Err(ToolError::invalid(format!(
                "{} is a directory; {tool} changes files, so give the path of a file.",
                path.display()
            )));
        }
        Err(e) => return Err(paths::open_failure(e, path, tool)),
    };
    guard::check_size(path, opened.meta.len())?;
    let bytes = match open::read_capped(&mut opened.file, crate::tools::read::MAX_FILE_BYTES) {
        Ok(Ok(b)) => b,
        Ok(Err(seen)) => return Err(guard::too_large(path, seen)),
        Err(e) => return Err(ToolError::io(format!("cannot read {}", path.display()), e)),
    };
    Ok(Some(Existing {
        bytes,
        meta: opened.meta,
    }))
}

/// Writes `bytes` where `real` is: over the file that was loaded (`existing`: its permissions
/// are kept, and another file that took its place is not overwritten) or as a new file
/// (missing directories are created; a file that appeared meanwhile is not overwritten).
/// Returns the new file's metadata.
pub fn store(
    path: &Path,
    real: &Path,
    roots: &[PathBuf],
    bytes: &[u8],
    existing: Option<&Metadata>,
) -> Result<Metadata, ToolError> {
    let (Some(dir_path), Some(name)) = (real.parent(), real.file_name()) else {
        return Err(ToolError::invalid(format!("{} is not a file path.", path.display())));
    };
    let dir = open::directory(dir_path, roots, existing.is_none()).map_err(|e| match e {
        OpenError::NotFound(_) => ToolError::invalid(format!(
            "the directory of {} no longer exists; nothing was written.",
            path.display()
        )),
        e => paths::open_failure(e, path, "the write"),
    })?;
    let replace = match existing {
        Some(m) => Replace::Same {
            dev: m.dev(),
            ino: m.ino(),
        },
        None => Replace::Nothing,
    };
    let opts = Options {
        sync: true,
        mode: replace::mode_for(existing),
        replace,
    };
    replace::write_in_dir(&dir, dir_path, name, bytes, opts).map_err(|e| match e {
        ReplaceError::Appeared => ToolError::invalid(format!(
            "{} appeared while it was being created (another process wrote it), so it was not overwritten. \
             Read it, then change it.",
            path.display()
        )),
        ReplaceError::Swapped => ToolError::invalid(format!(
            "{} was replaced by another file while it was being written, so nothing was overwritten. Read it \
             again, then repeat the change.",
            path.display()
        )),
        ReplaceError::Io(e) => ToolError::io(format!("cannot write {}", path.display()), e),
    })
}
