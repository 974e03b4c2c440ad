//! Content-addressed storage: each distinct file content is kept once, named by its SHA-256.

use std::path::PathBuf;

use sha2::{Digest, Sha256};

pub fn hex_hash(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes).into())
}

/// A SHA-256 digest in lower-case hex, the name of a stored copy.
pub fn hex(digest: &[u8; 32]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(64);
    for b in digest {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 0xf)] as char);
    }
    out
}

/// A file content with its SHA-256, hashed once and shared by the read state and the
/// checkpoint of one change.
#[derive(Debug, Clone, Copy)]
pub struct Hashed<'a> {
    pub bytes: &'a [u8],
    pub digest: [u8; 32],
}

impl<'a> Hashed<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Hashed {
            bytes,
            digest: Sha256::digest(bytes).into(),
        }
    }

    /// `bytes` with a digest the caller has already checked is theirs (the read state's hash
    /// of content that the guard found unchanged).
    pub fn known(bytes: &'a [u8], digest: [u8; 32]) -> Self {
        Hashed { bytes, digest }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_lower_case_hex_sha256() {
        assert_eq!(
            hex_hash(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(hex(&Hashed::new(b"abc").digest), hex_hash(b"abc"));
    }
}
