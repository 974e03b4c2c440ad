//! Reading a command's output file back, and keeping huge outputs on disk instead of in memory.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// Outputs up to this size are loaded whole (the pipeline's result budget then spills what is
/// over the inline limit, keeping all of it in a file).
pub use crate::fsutil::MAX_LOADED_BYTES;
/// For larger outputs: bytes kept from each end, chosen so head + tail fit the inline limit.
const EXCERPT_BYTES: u64 = 12_000;

#[derive(Debug)]
pub struct Captured {
    pub text: String,
    pub total_bytes: u64,
    /// Set when the output was too large to load and its file is kept for the model to read.
    pub kept_file: Option<PathBuf>,
}

/// Reads the output file; a huge one is summarised as head + tail + its path and kept.
pub fn read_output(path: &Path) -> std::io::Result<Captured> {
    let mut file = std::fs::File::open(path)?;
    let total = file.metadata()?.len();
    if total <= MAX_LOADED_BYTES {
        let mut bytes = Vec::with_capacity(total as usize);
        file.read_to_end(&mut bytes)?;
        return Ok(Captured {
            text: String::from_utf8_lossy(&bytes).into_owned(),
            total_bytes: total,
            kept_file: None,
        });
    }
    let mut head = vec![0; EXCERPT_BYTES as usize];
    file.read_exact(&mut head)?;
    file.seek(SeekFrom::Start(total - EXCERPT_BYTES))?;
    let mut tail = vec![0; EXCERPT_BYTES as usize];
    file.read_exact(&mut tail)?;
    let text = format!(
        "{}\n... [{} bytes of output omitted here; the complete output ({total} bytes) is in {} — Read or Grep it] ...\n{}",
        String::from_utf8_lossy(&head),
        total - 2 * EXCERPT_BYTES,
        path.display(),
        String::from_utf8_lossy(&tail)
    );
    Ok(Captured {
        text,
        total_bytes: total,
        kept_file: Some(path.to_path_buf()),
    })
}

/// Reads what was appended to `path` since `from`, at most `max` bytes, ending at a line break
/// when there is more to come. Returns the text and the new offset.
pub fn read_new(path: &Path, from: u64, max: u64) -> std::io::Result<(String, u64)> {
    let mut file = std::fs::File::open(path)?;
    let len = file.metadata()?.len();
    if len <= from {
        return Ok((String::new(), from));
    }
    file.seek(SeekFrom::Start(from))?;
    let want = (len - from).min(max);
    let mut bytes = vec![0; want as usize];
    file.read_exact(&mut bytes)?;
    if from + want < len
        && let Some(nl) = bytes.iter().rposition(|b| *b == b'\n')
    {
        bytes.truncate(nl + 1);
    }
    let next = from + bytes.len() as u64;
    Ok((String::from_utf8_lossy(&bytes).into_owned(), next))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_output_keeps_both_ends_and_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.log");
        let line = "0123456789abcdef\n";
        let n = (MAX_LOADED_BYTES as usize / line.len()) + 10;
        let mut body = line.repeat(n);
        body.push_str("THE END\n");
        std::fs::write(&p, &body).unwrap();
        let c = read_output(&p).unwrap();
        assert_eq!(c.kept_file.as_deref(), Some(p.as_path()));
        assert!(c.text.starts_with(line));
        assert!(c.text.ends_with("THE END\n"));
        assert!(c.text.contains(&p.display().to_string()));
        assert!(c.text.len() < 30_000);
    }

    #[test]
    fn read_new_advances_and_cuts_at_lines() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("o.log");
        std::fs::write(&p, "one\ntwo\nthree\n").unwrap();
        let (t, off) = read_new(&p, 0, 9).unwrap();
        assert_eq!(t, "one\ntwo\n");
        let (t, off) = read_new(&p, off, 100).unwrap();
        assert_eq!(t, "three\n");
        let (t, _) = read_new(&p, off, 100).unwrap();
        assert_eq!(t, "");
    }
}

/// Commands that print nothing when they succeed.
const SILENT_COMMANDS: &[&str] = &[
    "mkdir", "touch", "cp", "mv", "rm", "rmdir", "ln", "chmod", "chown", "chgrp", "cd", "export", "true", "unset",
];

/// Whether every command of the line is one that prints nothing on success (`mkdir -p a && cd
/// a`), so an empty output is the expected one (`noOutputExpected` of the structured result).
pub fn prints_nothing(command: &str) -> bool {
    let parts: Vec<&str> = command
        .split(['&', ';', '|', '\n'])
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    !parts.is_empty()
        && parts.iter().all(|p| {
            let first = p.split_whitespace().next().unwrap_or("");
            SILENT_COMMANDS.contains(&first) && !p.split_whitespace().any(|w| w == "-v" || w == "--verbose")
        })
}

#[cfg(test)]
mod silent_tests {
    use super::prints_nothing;

    #[test]
    fn silent_commands_expect_no_output() {
        assert!(prints_nothing("mkdir -p made"));
        assert!(prints_nothing("mkdir a && cd a; touch b"));
        assert!(!prints_nothing("echo hi"));
        assert!(!prints_nothing("mkdir a && ls"));
        assert!(!prints_nothing("cp -v a b"));
        assert!(!prints_nothing(""));
    }
}
