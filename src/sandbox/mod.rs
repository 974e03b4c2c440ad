//! OS confinement of shell commands (Linux). Two layers decide what a command may do: the
//! permission layer decides when to *ask* a human; this module makes the kernel *enforce*
//! what a command approved without a human may do.
//!
//! - The read-only jail ([`Confinement::ReadOnly`]) for commands keel approved on its own as
//!   read-only: no writes but `/dev/null` and a private temp dir, no network or unix
//!   sockets, no reads in home directories but the working directories and toolchains
//!   ([`reads`]), no credential reads, no capabilities, no signals or tracing outside the
//!   command.
//! - The workspace confinement ([`Confinement::WorkspaceWrite`]) for file commands acceptEdits
//!   approved: the jail plus writes in the working directories.
//! - The opt-in write sandbox (`--sandbox`, [`SandboxMode`]) for everything else.
//!
//! Confined commands run through keel itself: `keel __sandbox-exec [policy] -- program args`
//! applies the restrictions in a fresh single-threaded process and then execs the command, so
//! nothing unsafe happens between fork and exec in the multi-threaded agent.

pub mod bridge;
pub mod cgroup;
pub mod confiner;
pub mod contain;
pub mod domains;
pub mod fs_rules;
pub mod gitdir;
pub mod helper;
pub mod limits;
pub mod lockdown;
pub mod notes;
pub mod policy;
pub mod proxy;
pub mod quarantine;
pub mod reads;
pub mod secrets;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::config::settings::{Settings, SettingsError};
pub use confiner::Confiner;
pub use limits::Limits;
pub use notes::explain_failure;
pub use policy::{Kind, Policy};

pub const HELPER_ARG: &str = "__sandbox-exec";

/// How keel approved one shell command, which decides how it is confined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Confinement {
    /// A human, a rule, a hook or bypass mode approved it: the session's sandbox setting
    /// applies (none, or the write sandbox).
    #[default]
    Approved,
    /// keel approved it on its own as read-only: it runs in the read-only jail.
    ReadOnly,
    /// acceptEdits approved it as a file command inside the working directories.
    /// `creates_at_top`: it names a new entry at the top of a working directory, where missing
    /// configuration names can then not be reserved by the kernel (Landlock cannot refuse one
    /// name and allow another); otherwise they are.
    WorkspaceWrite { creates_at_top: bool },
}

/// The `sandbox` settings and `--sandbox`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SandboxConfig {
    pub enabled: bool,
    /// Refuse to run commands when the sandbox cannot be enforced (default), instead of
    /// running them unsandboxed with a warning.
    pub fail_if_unavailable: bool,
    pub allow_network: bool,
    /// `sandbox.network.allowedDomains` / `deniedDomains`: the hosts commands reach through
    /// keel's filtering proxy (`None`: no list is set).
    pub domains: Option<domains::DomainRules>,
    pub extra_writable: Vec<PathBuf>,
    /// `sandbox.filesystem.allowRead` / `denyRead`: what every confined command may read
    /// besides keel's defaults, and what it may not.
    pub reads: reads::ReadSettings,
}

impl SandboxConfig {
    pub fn from_settings(settings: &Settings, cli_enabled: bool) -> Result<Self, SettingsError> {
        let mut extra = Vec::new();
        for (p, layer) in settings.strings(&["sandbox", "additionalWritePaths"])? {
            extra.push(crate::fsutil::paths::resolve(&layer.base_dir, &p));
        }
        let allow_network = settings.flag(&["sandbox", "allowNetwork"])?.unwrap_or(false);
        Ok(SandboxConfig {
            enabled: cli_enabled || settings.flag(&["sandbox", "enabled"])?.unwrap_or(false),
            fail_if_unavailable: settings.flag(&["sandbox", "failIfUnavailable"])?.unwrap_or(true),
            allow_network,
            domains: domains::DomainRules::from_settings(settings, allow_network)?,
            extra_writable: extra,
            reads: reads::ReadSettings::from_settings(settings)?,
        })
    }

    /// The write sandbox's policy for a session with these working directories, before the
    /// configuration paths are filled in (they are looked up for each command, see
    /// [`Confiner`]). `tmp_dir` is the commands' private temporary directory (their `TMPDIR`):
    /// the shared `/tmp` stays read-only, so nothing leaks between sessions or escapes
    /// through it.
    pub fn policy(&self, working_dirs: &[PathBuf], tmp_dir: Option<&Path>) -> Policy {
        let mut writable: Vec<PathBuf> = working_dirs.to_vec();
        writable.extend(self.extra_writable.iter().cloned());
        writable.extend(tmp_dir.map(Path::to_path_buf));
        writable.sort();
        writable.dedup();
        Policy {
            kind: Kind::Sandbox,
            writable,
            protected: Vec::new(),
            reserved: Vec::new(),
            private: Vec::new(),
            readable: Vec::new(),
            hidden: Vec::new(),
            // With domain lists the proxy decides: no direct network (see `decide`).
            allow_network: self.allow_network && self.domains.is_none(),
            tmp_dir: tmp_dir.map(Path::to_path_buf),
            proxy: None,
        }
    }
}

/// How the session runs commands a human or rule approved.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum SandboxMode {
    /// No sandbox (not enabled, or enabled with `failIfUnavailable: false` where it cannot work).
    #[default]
    Off,
    Enforced(Policy),
    /// Enabled but not enforceable here: commands are refused with this reason.
    Refuse(String),
}

impl SandboxMode {
    /// Decides the mode at startup; the second value is a warning to show once.
    pub fn decide(config: &SandboxConfig, working_dirs: &[PathBuf], tmp_dir: &Path) -> (SandboxMode, Option<String>) {
        if !config.enabled {
            return (SandboxMode::Off, None);
        }
        let mut policy = config.policy(working_dirs, Some(tmp_dir));
        let caps = capabilities();
        if caps.can_enforce(&policy) {
            let note = match &config.domains {
                Some(rules) => attach_proxy(&mut policy, rules, caps),
                None => None,
            };
            return (SandboxMode::Enforced(policy), note);
        }
        let why = if caps.problems.is_empty() {
            "this kernel lacks the needed features".to_string()
        } else {
            caps.problems.join("; ")
        };
        if config.fail_if_unavailable {
            let msg = format!(
                "the sandbox cannot be enforced on this machine ({why}); shell commands will be refused (set sandbox.failIfUnavailable to false to run them unsandboxed)"
            );
            (SandboxMode::Refuse(msg.clone()), Some(msg))
        } else {
            (
                SandboxMode::Off,
                Some(format!(
                    "the sandbox cannot be enforced on this machine ({why}); shell commands run UNSANDBOXED"
                )),
            )
        }
    }
}

/// Starts the filtering proxy for the domain lists and routes the policy's commands through
/// it. Where it cannot work (no network namespace to confine the commands in, the proxy did
/// not start), commands get no network at all, and the returned warning says so.
fn attach_proxy(policy: &mut Policy, rules: &domains::DomainRules, caps: &Capabilities) -> Option<String> {
    if !caps.network_namespace {
        return Some(
            "sandbox.network domain lists need a network namespace, which this machine does not allow: sandboxed \
             commands get no network at all"
                .into(),
        );
    }
    match proxy::start(rules) {
        Ok(p) => {
            policy.proxy = Some(p.socket);
            None
        }
        Err(e) => Some(format!("{e}: sandboxed commands get no network at all")),
    }
}

/// What the kernel can enforce on this machine (from a probe in a helper process).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Capabilities {
    /// Landlock ABI version, when file-system restriction was enforced.
    pub landlock_abi: Option<i32>,
    pub filesystem: bool,
    /// Network isolation by a fresh network namespace.
    pub network_namespace: bool,
    /// A private mount namespace, for read-only binds of configuration.
    pub mount_namespace: bool,
    /// Network isolation of TCP by Landlock (ABI 4+).
    pub network_landlock_tcp: bool,
    pub seccomp: bool,
    /// The read-only jail was set up and held in a probe.
    pub jail: bool,
    /// Why something is unavailable.
    pub problems: Vec<String>,
}

impl Capabilities {
    pub fn network(&self) -> bool {
        self.network_namespace || self.seccomp
    }

    /// Whether a write-sandbox policy can be enforced in full (configuration that runs code
    /// later is kept read-only by mounts, so without a mount namespace the sandbox is not
    /// enforceable).
    pub fn can_enforce(&self, policy: &Policy) -> bool {
        self.filesystem && self.seccomp && self.mount_namespace && (policy.allow_network || self.network())
    }
}

/// The probe's answer, asked once per process.
pub fn capabilities() -> &'static Capabilities {
    static CAPS: OnceLock<Capabilities> = OnceLock::new();
    CAPS.get_or_init(probe)
}

/// Runs the probe in a helper process (so the agent itself is never restricted).
/// `KEEL_SANDBOX_ASSUME_UNSUPPORTED=1` makes keel behave as on a kernel without the features,
/// to check how a configuration copes (`sandbox.failIfUnavailable`, the allow-list fallback
/// of the read-only jail).
pub fn probe() -> Capabilities {
    if std::env::var_os("KEEL_SANDBOX_ASSUME_UNSUPPORTED").is_some_and(|v| !v.is_empty() && v != "0") {
        return Capabilities {
            problems: vec!["KEEL_SANDBOX_ASSUME_UNSUPPORTED is set".into()],
            ..Capabilities::default()
        };
    }
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            return Capabilities {
                problems: vec![format!("cannot locate the keel executable: {e}")],
                ..Capabilities::default()
            };
        }
    };
    match std::process::Command::new(exe).args([HELPER_ARG, "--probe"]).output() {
        Ok(out) => serde_json::from_slice(&out.stdout).unwrap_or_else(|e| Capabilities {
            problems: vec![format!(
                "the sandbox probe gave no answer ({e}): {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )],
            ..Capabilities::default()
        }),
        Err(e) => Capabilities {
            problems: vec![format!("cannot run the sandbox probe: {e}")],
            ..Capabilities::default()
        },
    }
}

/// The program and arguments that run `argv` under keel's helper: confined by `policy` (if
/// any), contained (the helper is a child subreaper and kills what the command leaves
/// behind) within `limits`, with its output capped at `cap` bytes. `sweep`: names the command
/// may create although they hold configuration, which keel looks at after it
/// ([`policy::open_top`], [`quarantine`]).
pub fn wrap(
    policy: Option<&Policy>,
    cap: u64,
    limits: Option<&Limits>,
    sweep: &[PathBuf],
    argv: &[String],
) -> std::io::Result<(PathBuf, Vec<String>)> {
    let exe = std::env::current_exe()?;
    let mut args = vec![HELPER_ARG.to_string(), "--cap".into(), cap.to_string()];
    args.extend(limits.map(Limits::to_args).unwrap_or_default());
    for p in sweep {
        args.extend(["--sweep".to_string(), p.display().to_string()]);
    }
    match policy {
        Some(p) => args.extend(p.to_args()),
        None => args.extend(["--kind".to_string(), "none".to_string()]),
    }
    args.push("--".into());
    args.extend(argv.iter().cloned());
    Ok((exe, args))
}
