//! Facts about the workspace's files that several features share: the cheap fingerprint that
//! tells which files a shell command changed (the evidence ledger; file checkpoints), taken by a
//! walk ([`fingerprint`]) or kept current from the kernel's change notifications ([`watch`]).

pub mod fingerprint;
pub mod snapshot;
pub mod watch;

pub use fingerprint::Fingerprinter;
pub use snapshot::{Changes, Detection, Fallback, Snapshot};
pub use watch::{Limits, Watcher};
