//! Facts about the workspace's files that several features share: the cheap fingerprint that
//! tells which files a shell command changed (the evidence ledger; file checkpoints).

pub mod fingerprint;

pub use fingerprint::{Changes, Fingerprinter, Snapshot};
