//! Content-addressed storage: each distinct file content is kept once, named by its SHA-256.

use std::path::PathBuf;

use sha2::{Digest, Sha256};

pub fn hex_hash(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

pub struct Blobs {
    dir: PathBuf,
}

impl Blobs {
    pub fn new(dir: PathBuf) -> Blobs {
        Blobs { dir }
    }

    fn path(&self, hash: &str) -> PathBuf {
        self.dir.join(hash)
    }

    /// Stores `bytes` under `hash` unless it is there already. With `durable` the copy is
    /// synced to disk (a previous content, about to be overwritten); without, it is left to
    /// the page cache (a new content, which is also being written to its file).
    pub fn put(&self, hash: &str, bytes: &[u8], durable: bool) -> std::io::Result<()> {
        let path = self.path(hash);
        if path.is_file() {
            return Ok(());
        }
        if durable {
            crate::fsutil::write_atomic(&path, bytes)
        } else {
            crate::fsutil::write_atomic_copy(&path, bytes)
        }
    }

    /// The content stored under `hash`, checked against it (a damaged copy is an error, never
    /// restored).
    pub fn get(&self, hash: &str) -> std::io::Result<Vec<u8>> {
        let bytes = std::fs::read(self.path(hash))?;
        if hex_hash(&bytes) != hash {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("the stored copy {} is damaged", self.path(hash).display()),
            ));
        }
        Ok(bytes)
    }
}
