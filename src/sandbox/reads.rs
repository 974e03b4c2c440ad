//! What a confined command may read outside the working directories.
//!
//! Every home directory — the user's, `/root`, each entry of `/home` — is private: inside one a
//! command reads only the working directories, the toolchain locations builds and tests need
//! ([`TOOLCHAINS`], the directories the environment names for them, the `PATH` entries),
//! configuration that holds no secret ([`PLAIN_CONFIG`], the user's own home only) and what the
//! session hands its commands (its hook environment file, spilled tool results and shell
//! output, the project's memory folder, the loaded skills' folders). keel's own state (its home,
//! every home's `.keel` and `.claude`) is private the same way. The fixed credential locations
//! stay hidden inside all of it, in every home. `sandbox.filesystem.allowRead` adds locations
//! (naming a credential location itself makes it readable), `denyRead` hides more, and a
//! deny wins over everything.

use std::collections::HashSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::config::settings::{Settings, SettingsError};

use super::secrets;

/// Toolchain locations in a home directory: installs, shims, caches and global packages that
/// builds and tests read. A final `*` matches names starting with what precedes it. Files
/// inside them that may hold a token (`.cargo/credentials.toml`, `.m2/settings.xml`,
/// `.gradle/gradle.properties`, `.gem/credentials`) are in the credential list and stay
/// hidden. Caches are named one by one: `~/.cache` as a whole also holds logins
/// (`~/.cache/huggingface/token`).
pub const TOOLCHAINS: &[&str] = &[
    // Rust
    ".cargo",
    ".rustup",
    // Python
    ".pyenv",
    ".local/bin",
    ".local/lib/python*",
    ".cache/pip",
    ".cache/uv",
    ".local/share/uv",
    ".cache/pypoetry",
    ".local/share/pypoetry",
    ".local/pipx",
    ".local/share/pipx",
    ".local/share/virtualenv",
    ".cache/pre-commit",
    ".conda",
    "miniconda3",
    "anaconda3",
    "miniforge3",
    // JavaScript
    ".npm",
    ".nvm",
    ".node-gyp",
    ".cache/node-gyp",
    ".npm-global",
    ".npm-packages",
    ".local/share/pnpm",
    ".cache/pnpm",
    ".pnpm-store",
    ".yarn",
    ".cache/yarn",
    ".config/yarn/global",
    ".volta",
    ".bun",
    ".deno",
    ".cache/deno",
    ".local/share/fnm",
    ".cache/ms-playwright",
    ".cache/puppeteer",
    ".cache/Cypress",
    // Version managers
    ".local/share/mise",
    ".cache/mise",
    ".config/mise",
    ".asdf",
    ".sdkman",
    // JVM
    ".m2",
    ".gradle",
    ".cache/coursier",
    ".jdks",
    // Go
    "go",
    ".cache/go-build",
    // Ruby
    ".gem",
    ".rbenv",
    ".local/share/gem",
    // Others
    ".ghcup",
    ".cabal",
    ".stack",
    ".opam",
    ".elan",
    ".dotnet",
    ".nuget/packages",
    ".ccache",
    ".cache/ccache",
    ".cache/sccache",
    ".cache/bazel",
    ".cache/zig",
];

/// Configuration in the user's home that tools read and that holds no secret: git's (not its
/// credential store), shells', editors', version pins.
pub const PLAIN_CONFIG: &[&str] = &[
    ".gitconfig",
    ".config/git/config",
    ".config/git/ignore",
    ".config/git/attributes",
    ".gitignore",
    ".gitignore_global",
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".config/fish/config.fish",
    ".config/fish/conf.d",
    ".config/fish/functions",
    ".inputrc",
    ".editorconfig",
    ".vimrc",
    ".config/nvim",
    ".nanorc",
    ".tmux.conf",
    ".dircolors",
    ".selected_editor",
    ".terminfo",
    ".tool-versions",
    ".python-version",
    ".node-version",
    ".nvmrc",
    ".ruby-version",
];

/// Environment variables naming a toolchain directory (a list for `GOPATH`).
const TOOLCHAIN_ENV: &[&str] = &[
    "CARGO_HOME",
    "RUSTUP_HOME",
    "PYENV_ROOT",
    "PIP_CACHE_DIR",
    "UV_CACHE_DIR",
    "UV_PYTHON_INSTALL_DIR",
    "UV_TOOL_DIR",
    "NVM_DIR",
    "npm_config_cache",
    "NPM_CONFIG_CACHE",
    "npm_config_prefix",
    "NPM_CONFIG_PREFIX",
    "PNPM_HOME",
    "VOLTA_HOME",
    "BUN_INSTALL",
    "DENO_DIR",
    "MISE_DATA_DIR",
    "MISE_CACHE_DIR",
    "ASDF_DATA_DIR",
    "ASDF_DIR",
    "SDKMAN_DIR",
    "GRADLE_USER_HOME",
    "GOPATH",
    "GOMODCACHE",
    "GOCACHE",
    "GOROOT",
    "RBENV_ROOT",
    "GEM_HOME",
    "JAVA_HOME",
];

/// Credential files inside directories the environment may move: `(variable, file)`.
const TOOLCHAIN_ENV_CREDENTIALS: &[(&str, &str)] = &[
    ("CARGO_HOME", "credentials"),
    ("CARGO_HOME", "credentials.toml"),
    ("GRADLE_USER_HOME", "gradle.properties"),
];

/// keel's own state in a home directory (and the reference tool's), private like a home.
pub const STATE_DIRS: &[&str] = &[".keel", ".claude"];

/// What in its own session folder keel hands a session's commands.
pub const SESSION_HANDED: &[&str] = &["hook-env.sh", "tool-results", "shell-output"];

/// `sandbox.filesystem.allowRead` and `denyRead`, resolved to absolute paths.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadSettings {
    pub allow: Vec<PathBuf>,
    pub deny: Vec<PathBuf>,
}

impl ReadSettings {
    /// Reads both lists from every settings layer (they add up). An entry is a path: `~/…` in
    /// the home, `/…` (or the reference's `//…`) absolute, anything else relative to the
    /// settings file's base directory; a trailing `/` or `/**` names the directory. A pattern
    /// (`*`, `?`, `[` elsewhere) cannot be kept out by path and is refused.
    pub fn from_settings(settings: &Settings) -> Result<ReadSettings, SettingsError> {
        let mut out = ReadSettings::default();
        for (key, list) in [("allowRead", &mut out.allow), ("denyRead", &mut out.deny)] {
            for (raw, layer) in settings.strings(&["sandbox", "filesystem", key])? {
                let path = parse_entry(&raw, &layer.base_dir).map_err(|problem| SettingsError::Invalid {
                    path: layer.label(),
                    key: format!("sandbox.filesystem.{key}"),
                    problem,
                })?;
                list.push(path);
            }
        }
        Ok(out)
    }
}

fn parse_entry(raw: &str, base: &Path) -> Result<PathBuf, String> {
    let trimmed = raw.trim();
    let mut s = trimmed.strip_suffix("/**").unwrap_or(trimmed);
    if s.len() > 1 {
        s = s.trim_end_matches('/');
    }
    if s.is_empty() {
        return Err(format!("`{raw}` names no path"));
    }
    if s.contains(['*', '?', '[']) {
        return Err(format!(
            "`{raw}` is a pattern; name a file or directory (a trailing `/**` is accepted)"
        ));
    }
    if s.starts_with('~') && s != "~" && !s.starts_with("~/") {
        return Err(format!(
            "`{raw}`: only your own home is written `~`; name another user's as an absolute path"
        ));
    }
    let s = if s.starts_with("//") { &s[1..] } else { s };
    Ok(crate::fsutil::paths::resolve(base, s))
}

/// Paths keel hands the session's commands from its own state.
#[derive(Debug, Clone, Default)]
pub struct Handed {
    /// The session's folder: its hook environment file, spilled tool results and shell output
    /// (its sub-agents' too) become readable.
    pub session_dir: Option<PathBuf>,
    /// Other folders: the project's memory, the loaded skills'.
    pub paths: Vec<PathBuf>,
}

/// The read side of one command's policy.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadLists {
    /// Trees unreadable but for the `readable` paths inside them.
    pub private: Vec<PathBuf>,
    pub readable: Vec<PathBuf>,
    /// Unreadable whatever holds them.
    pub hidden: Vec<PathBuf>,
}

/// A session's read policy, decided once; [`ReadScope::lists`] gives each command's lists.
#[derive(Debug, Clone, Default)]
pub struct ReadScope {
    homes: Vec<PathBuf>,
    state: Vec<PathBuf>,
    /// Toolchain and plain configuration locations.
    allowed: Vec<PathBuf>,
    /// Credential files in directories the environment moved.
    env_credentials: Vec<PathBuf>,
    settings: ReadSettings,
    handed: Handed,
}

impl ReadScope {
    /// The policy for a user whose home is `home` and whose keel state lies in `keel_home`,
    /// from keel's own environment (toolchain variables, `PATH`, XDG directories).
    pub fn new(home: Option<&Path>, keel_home: Option<&Path>, settings: ReadSettings, handed: Handed) -> ReadScope {
        Self::with_env(home, keel_home, settings, handed, &|k| std::env::var_os(k))
    }

    /// [`ReadScope::new`] with the environment read through `var`.
    pub fn with_env(
        home: Option<&Path>,
        keel_home: Option<&Path>,
        settings: ReadSettings,
        handed: Handed,
        var: &dyn Fn(&str) -> Option<OsString>,
    ) -> ReadScope {
        let env = |k: &str| var(k).filter(|v| !v.is_empty()).map(PathBuf::from);
        let homes = secrets::every_home(home);
        let mut state: Vec<PathBuf> = homes
            .iter()
            .flat_map(|h| STATE_DIRS.iter().map(move |s| h.join(s)))
            .collect();
        state.extend(keel_home.map(Path::to_path_buf));
        state.sort();
        state.dedup();
        let mut allowed = Vec::new();
        if let Some(h) = home {
            for rel in TOOLCHAINS.iter().chain(PLAIN_CONFIG) {
                allowed.extend(under_home(h, rel, &env));
            }
        }
        // Asked of every candidate (a hundred or more): the broad folders are joined once.
        let broad: HashSet<PathBuf> = homes
            .iter()
            .flat_map(|h| BROAD.iter().map(move |b| h.join(b)))
            .collect();
        let too_broad = |p: &Path| {
            !p.is_absolute()
                || broad.contains(p)
                || homes.iter().any(|h| h.starts_with(p))
                || state.iter().any(|s| p.starts_with(s))
        };
        for name in TOOLCHAIN_ENV {
            if let Some(v) = var(name) {
                allowed.extend(std::env::split_paths(&v).filter(|p| !too_broad(p)));
            }
        }
        if let Some(base) = env("PYTHONUSERBASE") {
            allowed.extend([base.join("bin"), base.join("lib/python*")]);
        }
        if let Some(path) = var("PATH") {
            for dir in std::env::split_paths(&path).filter(|p| !too_broad(p)) {
                // A program in a home runs from its toolchain's folder (a pyenv shim needs
                // the versions beside it); elsewhere in a home, only its own directory.
                let Some(h) = homes.iter().find(|h| dir.starts_with(h)) else {
                    continue;
                };
                let toolchain = TOOLCHAINS
                    .iter()
                    .map(|t| h.join(t))
                    .find(|t| !t.ends_with("*") && dir.starts_with(t));
                allowed.push(toolchain.unwrap_or(dir));
            }
        }
        allowed.retain(|p| !too_broad(p));
        // By bytes, not by components (several times faster): only duplicates need to go, and
        // `lists` sorts what it hands out by path.
        allowed.sort_unstable_by(|a, b| a.as_os_str().cmp(b.as_os_str()));
        allowed.dedup();
        let env_credentials = TOOLCHAIN_ENV_CREDENTIALS
            .iter()
            .filter_map(|(name, file)| env(name).map(|d| d.join(file)))
            .collect();
        ReadScope {
            homes,
            state,
            allowed,
            env_credentials,
            settings,
            handed,
        }
    }

    /// The read lists of one command working in `working_dirs`. Looks at the file system
    /// (names matched by `*`, the sub-agents' folders, which credential files exist), so a
    /// location that appears during the session counts from the next command on.
    pub fn lists(&self, working_dirs: &[PathBuf]) -> ReadLists {
        let mut private: Vec<PathBuf> = self.homes.iter().chain(&self.state).cloned().collect();
        let mut readable: Vec<PathBuf> = working_dirs.to_vec();
        readable.extend(self.allowed.iter().flat_map(|p| expand(p)));
        readable.extend(self.settings.allow.iter().cloned());
        readable.extend(self.handed.paths.iter().cloned());
        if let Some(dir) = &self.handed.session_dir {
            readable.extend(session_handed(dir));
        }
        // Credential locations matter only in homes something is readable in (any other is
        // closed as a whole); the system's always. Links count where they lead.
        let real = |p: &PathBuf| p.canonicalize().unwrap_or_else(|_| p.clone());
        let real_readable: Vec<PathBuf> = readable.iter().map(real).collect();
        let open_homes: Vec<PathBuf> = self
            .homes
            .iter()
            .filter(|h| {
                let real_home = real(h);
                readable.iter().any(|r| r.starts_with(h)) || real_readable.iter().any(|r| r.starts_with(&real_home))
            })
            .cloned()
            .collect();
        let mut hidden = Vec::new();
        for c in secrets::fixed_locations(&open_homes)
            .into_iter()
            .chain(self.env_credentials.iter().cloned())
        {
            // Naming a credential location in allowRead makes it readable; naming something
            // inside it opens that much.
            if self.settings.allow.iter().any(|a| a == &c) {
                continue;
            }
            if self.settings.allow.iter().any(|a| a.starts_with(&c)) {
                private.push(c);
            } else {
                hidden.push(c);
            }
        }
        hidden.extend(self.settings.deny.iter().cloned());
        for list in [&mut private, &mut readable, &mut hidden] {
            list.sort();
            list.dedup();
        }
        ReadLists {
            private,
            readable,
            hidden,
        }
    }

    /// What `keel doctor` shows: the private trees, the readable locations that exist here,
    /// and the settings' additions.
    pub fn report(&self) -> Vec<String> {
        let show = |v: &[PathBuf]| {
            let names: Vec<String> = v.iter().map(|p| p.display().to_string()).collect();
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        };
        let mut existing: Vec<PathBuf> = self
            .allowed
            .iter()
            .flat_map(|p| expand(p))
            .filter(|p| p.exists())
            .collect();
        existing.sort();
        let state: Vec<PathBuf> = self.state.iter().filter(|p| p.exists()).cloned().collect();
        vec![
            format!("home directories private: {}", show(&self.homes)),
            format!(
                "keel's state private (a session's commands read only the files it hands them): {}",
                show(&state)
            ),
            format!(
                "readable in them besides the working directories (toolchains, PATH, plain configuration; credential files inside stay hidden): {}",
                show(&existing)
            ),
            format!("sandbox.filesystem.allowRead: {}", show(&self.settings.allow)),
            format!("sandbox.filesystem.denyRead: {}", show(&self.settings.deny)),
        ]
    }
}

/// Folders in a home too broad to open through an environment variable or `PATH`.
const BROAD: &[&str] = &[".local", ".local/share", ".local/lib", ".config", ".cache"];

/// `rel` under the home `h`, and under the XDG directory that replaces its first part when
/// the environment sets one.
fn under_home(h: &Path, rel: &str, env: &dyn Fn(&str) -> Option<PathBuf>) -> Vec<PathBuf> {
    let mut out = vec![h.join(rel)];
    for (prefix, var) in [
        (".config/", "XDG_CONFIG_HOME"),
        (".cache/", "XDG_CACHE_HOME"),
        (".local/share/", "XDG_DATA_HOME"),
    ] {
        if let (Some(rest), Some(base)) = (rel.strip_prefix(prefix), env(var)) {
            out.push(base.join(rest));
        }
    }
    out
}

/// A path whose last part ends in `*`: the existing names it matches; any other path itself.
fn expand(p: &Path) -> Vec<PathBuf> {
    let Some(prefix) = p.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_suffix('*')) else {
        return vec![p.to_path_buf()];
    };
    let Some(parent) = p.parent() else { return Vec::new() };
    let Ok(entries) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.starts_with(prefix)))
        .map(|e| e.path())
        .collect()
}

/// The paths of a session folder its commands may read, its sub-agents' included.
fn session_handed(dir: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![dir.to_path_buf()];
    if let Ok(entries) = std::fs::read_dir(dir.join("subagents")) {
        dirs.extend(
            entries
                .flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path()),
        );
    }
    dirs.iter()
        .flat_map(|d| SESSION_HANDED.iter().map(move |n| d.join(n)))
        .collect()
}

#[cfg(test)]
#[path = "reads_tests.rs"]
mod tests;
