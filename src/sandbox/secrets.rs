//! Where credentials are, so the jail can keep them unreadable: fixed locations in the home
//! directory and the system, and credential files found in the working directories
//! (`.env*`, `*.pem`, `*.key`, and files Read deny rules name).
//!
//! The scan skips directories that hold generated or vendored files (`.git`, `node_modules`,
//! `target`, virtual environments, caches): a user's own secrets do not live there, and
//! walking them would cost more than the command. Its result is reused for a few seconds,
//! and dropped whenever a command that could write has run.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Directories the scan does not enter.
pub const SKIPPED_DIRS: &[&str] = &[
    ".git",
    "node_modules",
    "target",
    ".venv",
    "venv",
    "__pycache__",
    ".tox",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".gradle",
    ".next",
];

/// How long a scan is reused while nothing that could write has run.
const FRESH_FOR: Duration = Duration::from_secs(3);
/// Most entries one scan looks at; a larger tree is scanned up to here (see `truncated`).
const MAX_ENTRIES: usize = 200_000;

/// The fixed credential locations that exist: the home list joined to each of `homes`, and
/// the system's.
pub fn fixed_locations(homes: &[PathBuf]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for h in homes {
        out.extend(HOME_CREDENTIALS.iter().map(|c| h.join(c)));
    }
    out.extend(SYSTEM_CREDENTIALS.iter().map(PathBuf::from));
    out.retain(|p| p.symlink_metadata().is_ok());
    out.sort();
    out.dedup();
    out
}

/// Every home directory: `home` (the user's), `/root` and each entry of `/home`. A home of
/// `/` is left out (it would make everything private).
pub fn every_home(home: Option<&Path>) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = home
        .filter(|h| h.parent().is_some())
        .map(Path::to_path_buf)
        .into_iter()
        .collect();
    out.push(PathBuf::from("/root"));
    if let Ok(entries) = std::fs::read_dir("/home") {
        out.extend(entries.flatten().map(|e| e.path()));
    }
    out.sort();
    out.dedup();
    out
}

/// One scan of the working directories.
#[derive(Debug, Clone, Default)]
pub struct Scan {
    pub found: Vec<PathBuf>,
    /// The tree was larger than the scan's limit.
    pub truncated: bool,
}

/// Walks `dirs` for credential files: by name, or when `denied` (Read deny rules) says so.
/// Symbolic links are not followed; a link whose target is a credential file names that
/// target.
pub fn scan(dirs: &[PathBuf], denied: &dyn Fn(&Path) -> bool) -> Scan {
    let mut out = Scan::default();
    let mut seen = 0usize;
    let mut stack: Vec<PathBuf> = dirs.to_vec();
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for e in entries.flatten() {
            seen += 1;
            if seen > MAX_ENTRIES {
                out.truncated = true;
                return out;
            }
            let Ok(kind) = e.file_type() else { continue };
            let name = e.file_name();
            let name = name.to_string_lossy();
            let path = e.path();
            if kind.is_dir() {
                if !SKIPPED_DIRS.contains(&name.as_ref()) {
                    stack.push(path);
                }
            } else if kind.is_symlink() {
                if let Ok(target) = path.canonicalize()
                    && target.is_file()
                    && (target
                        .file_name()
                        .is_some_and(|n| is_credential_name(&n.to_string_lossy()))
                        || denied(&target))
                {
                    out.found.push(target);
                }
            } else if is_credential_name(&name) || denied(&path) {
                out.found.push(path);
            }
        }
    }
    out.found.sort();
    out.found.dedup();
    out
}

/// A scan kept for reuse.
#[derive(Debug, Default)]
pub struct ScanCache {
    last: Option<(Instant, Scan)>,
}

impl ScanCache {
    /// The cached scan while fresh, else a new one.
    pub fn get(&mut self, dirs: &[PathBuf], denied: &dyn Fn(&Path) -> bool) -> Scan {
        if let Some((at, scan)) = &self.last
            && at.elapsed() < FRESH_FOR
        {
            return scan.clone();
        }
        let scan = scan(dirs, denied);
        self.last = Some((Instant::now(), scan.clone()));
        scan
    }

    /// Forgets the scan (a command that could write has run).
    pub fn invalidate(&mut self) {
        self.last = None;
    }
}

/// Credential locations in the home directory: keys, tokens and passwords of common tools.
pub const HOME_CREDENTIALS: &[&str] = &[
    ".ssh",
    ".aws",
    ".gnupg",
    ".netrc",
    ".config/gcloud",
    ".azure",
    ".kube",
    ".docker/config.json",
    ".git-credentials",
    ".config/gh",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".password-store",
    ".vault-token",
    ".pgpass",
    ".claude/.credentials.json",
    // The reference tool's state: an API key saved by its login, MCP servers' environment.
    ".claude.json",
    // Other tools' saved logins and tokens.
    ".codex/auth.json",
    ".terraform.d/credentials.tfrc.json",
    ".config/rclone",
    ".config/op",
    ".config/hub",
    ".config/doctl",
    ".s3cfg",
    ".boto",
    ".m2/settings.xml",
    ".gradle/gradle.properties",
    ".local/share/keyrings",
    // Browser profiles (cookies, saved passwords) and shell history (secrets typed on the
    // command line).
    ".mozilla",
    ".config/google-chrome",
    ".config/chromium",
    ".bash_history",
    ".zsh_history",
    ".python_history",
    ".psql_history",
    ".mysql_history",
    ".sqlite_history",
    ".node_repl_history",
    ".rediscli_history",
    ".lesshst",
    ".local/share/fish/fish_history",
    // git's own credential store, package and container registries' saved logins.
    ".config/git/credentials",
    ".config/pip",
    ".pip",
    ".yarnrc",
    ".yarnrc.yml",
    ".gem/credentials",
    ".bundle/config",
    ".m2/settings-security.xml",
    ".config/containers/auth.json",
    ".config/configstore",
    ".subversion/auth",
    // Code-host and assistant logins.
    ".config/glab-cli",
    ".config/github-copilot",
    ".gemini",
    ".cache/huggingface/token",
    ".cache/huggingface/stored_tokens",
    ".huggingface/token",
    // Database clients' passwords.
    ".my.cnf",
    ".mylogin.cnf",
    // Cloud and service CLIs.
    ".oci",
    ".fly",
    ".databrickscfg",
    ".kaggle",
    ".terraformrc",
    ".config/hcloud",
];

/// System files that hold password hashes or host keys (readable by root without privileges).
pub const SYSTEM_CREDENTIALS: &[&str] = &[
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/shadow-",
    "/etc/gshadow-",
    "/etc/ssh",
];

/// Whether a file name marks a credential file wherever it lies (`.env*`, keys).
pub fn is_credential_name(name: &str) -> bool {
    name.starts_with(".env") || name.ends_with(".pem") || name.ends_with(".key")
}

/// Credential files read only when an allow rule names them. The home list applies to `home`
/// and to every other home (`/root`, `/home/*`).
pub fn credential_reason(path: &Path, home: Option<&Path>) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    // Called for every file a search visits: a clean path (the usual case) is compared as
    // bytes at component boundaries, the rest component by component.
    let hit = is_credential_name(name)
        || match (clean(path), home.map(clean)) {
            (Some(p), None | Some(Some(_))) => credential_place_clean(p, home.and_then(clean)),
            _ => credential_place(path, home),
        };
    hit.then(|| format!("{} may hold credentials", path.display()))
}

/// Whether `path` lies in a credential location, comparing components.
fn credential_place(path: &Path, home: Option<&Path>) -> bool {
    let in_secret_dir = within_homes(path, home).any(|rel| {
        rel.components().next().is_some_and(|first| {
            HOME_CREDENTIALS
                .iter()
                .any(|c| Path::new(c).components().next() == Some(first) && rel.starts_with(c))
        })
    });
    in_secret_dir
        || (SYSTEM_CREDENTIALS.iter().any(|c| path.starts_with(c)) && !path.starts_with("/etc/ssh/ssh_config"))
}

/// [`credential_place`] for clean paths ([`clean`]), where a byte prefix that ends at a `/`
/// is exactly a component prefix.
fn credential_place_clean(path: &[u8], home: Option<&[u8]>) -> bool {
    let below_home = below(path, b"/home").map(|rel| match rel.iter().position(|&b| b == b'/') {
        Some(i) => &rel[i + 1..],
        None => &rel[rel.len()..],
    });
    let in_secret_dir = home
        .and_then(|h| below(path, h))
        .into_iter()
        .chain(below(path, b"/root"))
        .chain(below_home)
        .any(|rel| HOME_CREDENTIALS.iter().any(|c| under(rel, c.as_bytes())));
    in_secret_dir
        || (SYSTEM_CREDENTIALS.iter().any(|c| under(path, c.as_bytes())) && !under(path, b"/etc/ssh/ssh_config"))
}

/// `path` is `prefix` or lies below it.
fn under(path: &[u8], prefix: &[u8]) -> bool {
    path.starts_with(prefix) && (path.len() == prefix.len() || path[prefix.len()] == b'/')
}

/// What follows `prefix/` in `path` (empty for `prefix` itself).
fn below<'a>(path: &'a [u8], prefix: &[u8]) -> Option<&'a [u8]> {
    under(path, prefix).then(|| path.get(prefix.len() + 1..).unwrap_or_default())
}

/// The bytes of an absolute path with no empty, `.` or `..` component and no trailing `/`.
fn clean(path: &Path) -> Option<&[u8]> {
    use std::os::unix::ffi::OsStrExt;
    let b = path.as_os_str().as_bytes();
    let ok = b.len() > 1
        && b[0] == b'/'
        && b[1..]
            .split(|&c| c == b'/')
            .all(|part| !matches!(part, b"" | b"." | b".."));
    ok.then_some(b)
}

/// `path` relative to each home it may lie in: `home`, `/root`, and `/home/<name>`.
fn within_homes<'a>(path: &'a Path, home: Option<&'a Path>) -> impl Iterator<Item = &'a Path> {
    let below_home = path.strip_prefix("/home").ok().map(|rel| {
        let mut comps = rel.components();
        comps.next();
        comps.as_path()
    });
    home.and_then(|h| path.strip_prefix(h).ok())
        .into_iter()
        .chain(path.strip_prefix("/root").ok())
        .chain(below_home)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_finds_credential_files_and_link_targets_but_skips_vendored_trees() {
        let d = tempfile::tempdir().unwrap();
        let w = d.path().canonicalize().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let secret_elsewhere = outside.path().canonicalize().unwrap().join("prod.pem");
        std::fs::write(&secret_elsewhere, "k").unwrap();
        for f in [
            ".env",
            "app/.env.local",
            "app/certs/server.key",
            "node_modules/x/.env",
            "src/main.rs",
            "deny/me.txt",
        ] {
            let p = w.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, "x").unwrap();
        }
        std::os::unix::fs::symlink(&secret_elsewhere, w.join("cert")).unwrap();
        let s = scan(std::slice::from_ref(&w), &|p: &Path| p.ends_with("deny/me.txt"));
        let mut want = vec![
            w.join(".env"),
            w.join("app/.env.local"),
            w.join("app/certs/server.key"),
            w.join("deny/me.txt"),
            secret_elsewhere,
        ];
        want.sort();
        assert_eq!(s.found, want);
        assert!(!s.truncated);
    }

    /// The home list holds in every home, not only the user's.
    #[test]
    fn credential_locations_hold_in_every_home() {
        let home = Some(Path::new("/home/u"));
        for p in [
            "/root/.ssh/id_rsa",
            "/home/other/.npmrc",
            "/home/other/.config/git/credentials",
            "/home/u/.cache/huggingface/token",
            "/home/u/.local/share/fish/fish_history",
        ] {
            assert!(credential_reason(Path::new(p), home).is_some(), "{p}");
        }
        for p in [
            "/home/other/src/main.rs",
            "/root/.cargo/bin/cargo",
            "/homework/.npmrc",
            "/srv/.npmrc",
        ] {
            assert!(credential_reason(Path::new(p), home).is_none(), "{p}");
        }
    }

    /// The byte comparison of clean paths decides as the component comparison does, and a
    /// path that is not clean is still judged (by components).
    #[test]
    fn clean_paths_are_judged_as_components_would() {
        let paths = [
            "/home/u/.ssh",
            "/home/u/.ssh/id_rsa",
            "/home/u/.sshx/id_rsa",
            "/home/u/.config/gcloud/creds.db",
            "/home/u/.config/gcloudx",
            "/home/u/.docker/config.json",
            "/home/u/.docker/config.jsonx",
            "/home/other/.aws/credentials",
            "/home/other",
            "/home",
            "/root/.netrc",
            "/root",
            "/rootx/.netrc",
            "/etc/shadow",
            "/etc/shadow-",
            "/etc/shadowy",
            "/etc/ssh/ssh_host_rsa_key",
            "/etc/ssh/ssh_config",
            "/etc/ssh/ssh_config.d/x.conf",
            "/etc/ssh",
            "/work/repo/src/main.rs",
            "/work/repo/.ssh/notes.md",
            "/opt/u/.ssh/id_rsa",
        ];
        for home in [Some(Path::new("/home/u")), Some(Path::new("/opt/u")), None] {
            for p in paths {
                let path = Path::new(p);
                let fast = credential_place_clean(clean(path).unwrap(), home.and_then(clean));
                assert_eq!(fast, credential_place(path, home), "{p} with home {home:?}");
            }
        }
        let home = Some(Path::new("/home/u"));
        for p in [
            "/home/u//.ssh/id_rsa",
            "/home/u/./.ssh/id_rsa",
            "//etc/shadow",
            "/etc/ssh/",
        ] {
            assert!(clean(Path::new(p)).is_none(), "{p}");
            assert!(credential_reason(Path::new(p), home).is_some(), "{p}");
        }
        // A home that is not clean is compared by components too.
        assert!(credential_reason(Path::new("/home/u/.ssh/id_rsa"), Some(Path::new("/home/u/"))).is_some());
        assert!(credential_reason(Path::new("/opt/u/.aws/config"), Some(Path::new("/opt//u"))).is_some());
    }
}
