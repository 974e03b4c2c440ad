//! What shell undo costs per Bash call (scripts/checkpoint_bench.sh, docs/PERFORMANCE.md): on a
//! generated repository of 9,000 small files (plus one of 1 MB),
//!
//! 1. the first stash of a session (every file copied: the session's first command that may
//!    write);
//! 2. the stash before each later command when one file changed (map lookups, one `lstat` per
//!    kept file, one copy);
//! 3. logging a command's changes (`record_shell`) for one modified, one created, one removed
//!    file.

// Benchmark code: a failed unwrap is a failed run, reported with its panic message.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// A benchmark prints its own measurements.
#![allow(clippy::disallowed_macros)]

use std::collections::HashMap;
use std::path::Path;
use std::time::Instant;

use keel::checkpoint::{Checkpoints, PointKind};
use keel::workspace::Fingerprinter;

const FILES: usize = 9_000;

fn generate(root: &Path) {
    for i in 0..FILES {
        let dir = root.join(format!("src/mod{:03}/sub{}", i / 50, i % 5));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join(format!("file{i}.rs")),
            format!("pub fn f{i}() {{}}\n").repeat(20),
        )
        .unwrap();
    }
    std::fs::write(root.join("big.bin"), vec![7u8; 1 << 20]).unwrap();
}

fn cpu_ms() -> f64 {
    let mut u = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct it is given.
    let u = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, u.as_mut_ptr());
        u.assume_init()
    };
    let ms = |t: libc::timeval| t.tv_sec as f64 * 1000.0 + t.tv_usec as f64 / 1000.0;
    ms(u.ru_utime) + ms(u.ru_stime)
}

fn timed<T>(what: &str, f: impl FnOnce() -> T) -> T {
    let (t, c) = (Instant::now(), cpu_ms());
    let out = f();
    println!(
        "{what}: wall {:.1} ms, CPU {:.1} ms",
        t.elapsed().as_secs_f64() * 1000.0,
        cpu_ms() - c
    );
    out
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let root = base.join("ws");
    std::fs::create_dir_all(&root).unwrap();
    println!(
        "generating {FILES} files of 400 bytes and one of 1 MB in {}",
        root.display()
    );
    timed("writing those files in the first place (reference)", || generate(&root));
    let store = Checkpoints::new(&base.join("session"));
    store.begin(PointKind::Prompt, "bench").unwrap();
    let fp = Fingerprinter::new(&root);
    let none = HashMap::new();

    let snap = fp.snapshot();
    timed("first stash (every file copied)", || {
        let due = store.due_before_shell(Some(&snap), &none, &[]);
        assert_eq!(due.len(), FILES + 1);
        store.stash_before_shell(&root, due);
    });

    let mut rounds = Vec::new();
    for i in 0..20 {
        let f = root.join(format!("src/mod000/sub0/file{}.rs", i * 5));
        std::fs::write(&f, format!("changed {i}\n")).unwrap();
        let snap = fp.snapshot();
        let (t, c) = (Instant::now(), cpu_ms());
        let mut due = store.due_before_shell(Some(&snap), &none, &[]);
        assert_eq!(due.len(), 1);
        due.extend(store.revalidate(&root));
        store.stash_before_shell(&root, due);
        rounds.push((t.elapsed().as_secs_f64() * 1000.0, cpu_ms() - c));
    }
    rounds.sort_by(|a, b| a.0.total_cmp(&b.0));
    let median = rounds[rounds.len() / 2];
    println!(
        "later stash, one file changed ({} runs): wall median {:.2} ms, CPU {:.2} ms",
        rounds.len(),
        median.0,
        median.1
    );

    let snap = fp.snapshot();
    let due = store.due_before_shell(Some(&snap), &none, &[]);
    store.stash_before_shell(&root, due);
    std::fs::write(root.join("src/mod001/sub1/file51.rs"), "edited\n").unwrap();
    std::fs::write(root.join("created.txt"), "new\n").unwrap();
    std::fs::remove_file(root.join("src/mod002/sub2/file102.rs")).unwrap();
    let c = snap.diff(&fp.snapshot());
    timed("record_shell (1 modified, 1 created, 1 removed)", || {
        assert!(store.record_shell(&root, &c.added, &c.modified, &c.removed).is_empty());
    });
}
