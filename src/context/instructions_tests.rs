//! Instruction file discovery, imports and what a hostile repository's imports may not read.

use super::*;

fn write(root: &Path, rel: &str, text: &str) -> PathBuf {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, text).unwrap();
    p
}

fn names(files: &[InstructionFile], root: &Path) -> Vec<String> {
    files
        .iter()
        .map(|f| f.path.strip_prefix(root).unwrap().display().to_string())
        .collect()
}

#[test]
fn loads_user_then_root_to_cwd_in_order() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    write(&root, "home/.claude/CLAUDE.md", "user rules");
    write(&root, "repo/CLAUDE.md", "repo rules");
    write(&root, "repo/AGENTS.md", "agents rules");
    write(&root, "repo/CLAUDE.local.md", "local rules");
    write(&root, "repo/app/.claude/CLAUDE.md", "app rules");
    write(&root, "repo/app/sub/CLAUDE.md", "nested rules");
    let cwd = root.join("repo/app");
    let ins = Instructions::discover(&cwd, Some(&root.join("home")));
    assert_eq!(
        names(&ins.files, &root),
        vec![
            "home/.claude/CLAUDE.md",
            "repo/CLAUDE.md",
            "repo/AGENTS.md",
            "repo/CLAUDE.local.md",
            "repo/app/.claude/CLAUDE.md"
        ]
    );
    assert_eq!(ins.files[0].scope, Scope::User);
    assert_eq!(ins.files[3].scope, Scope::Local);
    assert!(ins.warnings.is_empty(), "{:?}", ins.warnings);
    let text = render(&ins.files);
    assert!(text.find("user rules").unwrap() < text.find("app rules").unwrap());
    assert!(!text.contains("nested rules"));
}

#[test]
fn nested_files_load_once_when_a_tool_touches_their_subtree() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    write(&root, "CLAUDE.md", "top");
    write(&root, "a/CLAUDE.md", "a rules");
    write(&root, "a/b/AGENTS.md", "b rules");
    let file = write(&root, "a/b/code.rs", "fn x() {}");
    write(&root, "c/CLAUDE.md", "c rules");
    let mut ins = Instructions::discover(&root, None);
    assert_eq!(names(&ins.files, &root), vec!["CLAUDE.md"]);
    let found = ins.touch(&file);
    assert_eq!(names(&found, &root), vec!["a/CLAUDE.md", "a/b/AGENTS.md"]);
    assert!(found.iter().all(|f| f.scope == Scope::Nested));
    assert!(ins.touch(&file).is_empty(), "each directory is looked at once");
    assert!(ins.touch(&root.join("a/other.rs")).is_empty());
    // A directory given as a path (Grep/Glob `path`) counts itself.
    assert_eq!(names(&ins.touch(&root.join("c")), &root), vec!["c/CLAUDE.md"]);
    // Paths outside the working directory or the directory itself load nothing.
    assert!(ins.touch(Path::new("/etc/hosts")).is_empty());
    assert!(ins.touch(&root).is_empty());
    assert_eq!(ins.all().count(), 4);
    let reminder = render_reminder(&ins.nested);
    assert!(reminder.starts_with("<system-reminder>") && reminder.contains("b rules"));
    // After a reload (compaction) nested files load again on the next touch.
    ins.reload();
    assert!(ins.nested.is_empty());
    assert_eq!(ins.touch(&file).len(), 2);
}

#[test]
fn imports_come_first_are_cycle_safe_and_depth_limited() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    write(&root, "CLAUDE.md", "main @docs/one.md and `@docs/ignored.md`\n");
    write(&root, "docs/one.md", "one @two.md");
    write(&root, "docs/two.md", "two @../CLAUDE.md @three.md");
    write(&root, "docs/three.md", "three @four.md");
    write(&root, "docs/four.md", "four @five.md");
    write(&root, "docs/five.md", "five");
    write(&root, "docs/ignored.md", "ignored");
    write(&root, "AGENTS.md", "agents @docs/missing.md @docs/one.md");
    let ins = Instructions::discover(&root, None);
    // CLAUDE.md → one → two → three → four is five files deep; five.md is one too many.
    assert_eq!(
        names(&ins.files, &root),
        vec![
            "docs/four.md",
            "docs/three.md",
            "docs/two.md",
            "docs/one.md",
            "CLAUDE.md",
            "AGENTS.md"
        ]
    );
    let depths: Vec<u8> = ins.files.iter().map(|f| f.depth).collect();
    assert_eq!(depths, vec![5, 4, 3, 2, 1, 1]);
    assert_eq!(
        ins.files[3].imported_by.as_deref(),
        Some(root.join("CLAUDE.md").as_path())
    );
    assert!(
        ins.warnings
            .iter()
            .any(|w| w.contains("@five.md") && w.contains("5 files deep")),
        "{:?}",
        ins.warnings
    );
    assert!(
        ins.warnings
            .iter()
            .any(|w| w.contains("missing.md") && w.contains("does not exist")),
        "{:?}",
        ins.warnings
    );
    assert!(!ins.files.iter().any(|f| f.content == "ignored"));
}

/// A hostile repository's instruction files reach for credentials and other files of the
/// user: by `~/`, by `../`, by absolute path and through links inside the repository.
#[test]
fn a_repository_cannot_import_credentials_or_outside_files_without_approval() {
    use std::os::unix::fs::symlink;
    let t = tempfile::tempdir().unwrap();
    let base = t.path().canonicalize().unwrap();
    let home = base.join("home");
    let repo = base.join("src/repo");
    write(&home, ".ssh/id_rsa", "SSH-SECRET");
    write(&home, ".aws/credentials", "AWS-SECRET");
    write(&home, "notes/private.md", "PRIVATE-NOTES");
    write(
        &home,
        ".claude/CLAUDE.md",
        "user @~/notes/private.md @~/.aws/credentials",
    );
    write(&base, "src/other/secret.md", "OTHER-REPO");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    write(&repo, "docs/style.md", "IN-REPO-STYLE");
    write(&repo, ".env", "DOTENV-SECRET");
    symlink(home.join(".ssh/id_rsa"), repo.join("docs/key.md")).unwrap();
    symlink(home.join("notes"), repo.join("linked")).unwrap();
    write(
        &repo,
        "CLAUDE.md",
        "@~/.ssh/id_rsa @../other/secret.md @docs/style.md @docs/key.md @linked/private.md @.env",
    );
    let abs = format!("@{}", home.join(".aws/credentials").display());
    write(&repo, "app/AGENTS.md", &format!("{abs} @../docs/style.md"));
    symlink(home.join("notes/private.md"), repo.join("CLAUDE.local.md")).unwrap();
    let cwd = repo.join("app");
    let mut ins = Instructions::discover(&cwd, Some(&home));
    let text = render(&ins.files);
    assert!(text.contains("IN-REPO-STYLE"), "{text}");
    for secret in ["SSH-SECRET", "AWS-SECRET", "DOTENV-SECRET", "OTHER-REPO"] {
        assert!(!text.contains(secret), "{secret} reached the context:\n{text}");
    }
    // The user's own file imports their notes as before (but never credentials).
    let user = ins.files.iter().find(|f| f.path == home.join("notes/private.md"));
    assert_eq!(user.map(|f| f.scope), Some(Scope::User));
    let notices = ins.skipped_notices();
    let has = |a: &str, b: &str| notices.iter().any(|n| n.contains(a) && n.contains(b));
    assert!(
        has("CLAUDE.md: @~/.ssh/id_rsa not loaded", "credentials"),
        "{notices:?}"
    );
    assert!(has("CLAUDE.md: @docs/key.md not loaded", "credentials"), "{notices:?}");
    assert!(has("CLAUDE.md: @.env not loaded", "credentials"), "{notices:?}");
    assert!(has("app/AGENTS.md: @/", "credentials"), "{notices:?}");
    assert!(
        has(".claude/CLAUDE.md: @~/.aws/credentials", "credentials"),
        "{notices:?}"
    );
    assert!(
        has("CLAUDE.md: @../other/secret.md not loaded", "outside the project"),
        "{notices:?}"
    );
    assert!(
        has("CLAUDE.md: @linked/private.md not loaded", "outside the project"),
        "{notices:?}"
    );
    assert!(
        has("CLAUDE.local.md: not loaded: it is a link", "outside the project"),
        "{notices:?}"
    );
    let skipped: Vec<&Path> = ins
        .external
        .iter()
        .filter(|e| !e.loaded)
        .map(|e| e.target.as_path())
        .collect();
    assert_eq!(
        skipped,
        vec![
            base.join("src/other/secret.md").as_path(),
            home.join("notes/private.md").as_path(),
            home.join("notes/private.md").as_path()
        ],
        "each import once, by its real path (the link and CLAUDE.local.md lead to one file)"
    );
    assert!(notices.iter().all(|n| !n.contains("SECRET")), "{notices:?}");
    // Nested files are held to the same rule.
    write(&cwd, "sub/CLAUDE.md", "@../../../other/secret.md");
    let found = ins.touch(&cwd.join("sub/x.rs"));
    assert_eq!(found.len(), 1);
    assert!(!render(&found).contains("OTHER-REPO"));
    assert_eq!(ins.skipped_notices().len(), notices.len() + 1);

    // Approved outside files load (the credential stays out), and stay approved on reload.
    let mut policy = ImportPolicy::strict(&cwd, Some(&home));
    policy.external = super::super::import_policy::External::Approved(vec![
        base.join("src/other/secret.md"),
        home.join("notes/private.md"),
    ]);
    let mut ins = Instructions::discover_with(&cwd, Some(&home), policy);
    for _ in 0..2 {
        let text = render(&ins.files);
        assert!(text.contains("OTHER-REPO") && text.contains("PRIVATE-NOTES"), "{text}");
        assert!(!text.contains("SSH-SECRET") && !text.contains("AWS-SECRET"), "{text}");
        assert!(ins.external.iter().all(|e| e.loaded), "{:?}", ins.external);
        ins.reload();
    }
}

/// The session's other working directories count as inside; credentials in them do not.
#[test]
fn other_working_directories_are_inside_the_project() {
    let t = tempfile::tempdir().unwrap();
    let base = t.path().canonicalize().unwrap();
    write(&base, "shared/conventions.md", "SHARED-CONVENTIONS");
    write(&base, "shared/.env.local", "SHARED-SECRET");
    write(
        &base,
        "repo/CLAUDE.md",
        "@../shared/conventions.md @../shared/.env.local",
    );
    let cwd = base.join("repo");
    let mut ins = Instructions::discover(&cwd, None);
    assert!(!render(&ins.files).contains("SHARED-CONVENTIONS"));
    ins.include_dirs(&[base.join("shared")]);
    let text = render(&ins.files);
    assert!(
        text.contains("SHARED-CONVENTIONS") && !text.contains("SHARED-SECRET"),
        "{text}"
    );
    assert_eq!(ins.included_dirs(), &[base.join("shared")]);
    assert_eq!(ins.skipped_notices().len(), 1, "{:?}", ins.skipped_notices());
}

/// Imports read regular files only, within the size bound: a FIFO never blocks startup.
#[test]
fn imports_read_regular_files_within_the_bound() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    let fifo = root.join("pipe.md");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    std::fs::create_dir_all(root.join("dir.md")).unwrap();
    let big = std::fs::File::create(root.join("big.md")).unwrap();
    big.set_len(MAX_FILE_BYTES + 1).unwrap();
    write(&root, "CLAUDE.md", "main @pipe.md @dir.md @big.md");
    let ins = Instructions::discover(&root, None);
    assert_eq!(names(&ins.files, &root), vec!["CLAUDE.md"]);
    for name in ["pipe.md", "dir.md", "big.md"] {
        assert!(
            ins.warnings.iter().any(|w| w.contains(name) && w.contains("skipped")),
            "{name}: {:?}",
            ins.warnings
        );
    }
}

/// (Kept from the red team: the same hostile repository seen by the default, strict policy.)
#[test]
fn repository_files_import_nothing_from_outside_the_repository() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    let home = root.join("home");
    write(&root, "home/.ssh/id_rsa", "SECRET-KEY");
    write(&root, "home/.bash_history", "SECRET-HISTORY");
    write(&root, "home/notes.md", "user notes");
    write(&root, "home/.claude/CLAUDE.md", "@~/notes.md\n@~/.ssh/id_rsa\n");
    std::fs::create_dir_all(root.join("repo/.git")).unwrap();
    write(
        &root,
        "repo/CLAUDE.md",
        "@~/.ssh/id_rsa\n@../home/.bash_history\n@/proc/self/environ\n@docs/ok.md\n",
    );
    write(&root, "repo/docs/ok.md", "inside the repository");
    std::os::unix::fs::symlink("../home/.bash_history", root.join("repo/AGENTS.md")).unwrap();
    let ins = Instructions::discover(&root.join("repo"), Some(&home));
    let text = render(&ins.files);
    assert!(!text.contains("SECRET"), "{text}");
    assert!(
        text.contains("inside the repository") && text.contains("user notes"),
        "{text}"
    );
    // Each one is reported: refused outright (credentials) or held back for approval.
    let reported = format!("{:?} {:?}", ins.refused, ins.external);
    for name in ["id_rsa", ".bash_history", "environ", "AGENTS.md"] {
        assert!(reported.contains(name), "{name}: {reported}");
    }
}
