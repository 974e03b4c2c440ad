//! `keel doctor`: what this machine and this configuration support.

use std::path::Path;
use std::process::ExitCode;

use super::args::ProviderKind;
use crate::config::paths;
use crate::config::settings::Settings;
use crate::console::out_line;
use crate::sandbox::{self, SandboxConfig};

/// The protections in force, after the precedence rule: which layer set each, and what a
/// layer tried to change and may not.
fn protections(settings: &Settings, cwd: &Path, keel_home: &Path) -> u32 {
    use crate::config::precedence::{self, Weigh};
    let mut s = settings.clone();
    if let Err(e) = precedence::check_managed(&s) {
        out_line!("\nProtections\n  FAIL {e}: keel will not start until it is fixed");
        return 1;
    }
    let trusted = cwd
        .canonicalize()
        .is_ok_and(|c| crate::config::trust::is_trusted(keel_home, &c));
    let lower_only = crate::sandbox::limits::Limits::lower_only();
    let notices = precedence::enforce(
        &mut s,
        Weigh {
            project_trusted: trusted,
            lower_only: &lower_only,
        },
    );
    out_line!("\nProtections (managed settings fix what they set; project and local settings can only tighten yours)");
    for v in crate::launch::provenance::protections(&s) {
        out_line!("  {} = {}  (from {})", v.key, v.value, v.origin.describe());
    }
    for n in notices {
        out_line!("  --   {n}");
    }
    0
}

pub async fn run(provider: Option<ProviderKind>, model: Option<String>, offline: bool) -> ExitCode {
    let mut problems = 0;
    out_line!(
        "keel {} on {} ({})",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::OS,
        std::env::consts::ARCH
    );

    let cwd = std::env::current_dir().unwrap_or_else(|_| ".".into());
    let home = dirs::home_dir();
    let keel_home = paths::keel_home().unwrap_or_else(|| cwd.join(".keel"));
    out_line!("\nSettings");
    let settings = match Settings::load(home.as_deref(), &keel_home, &cwd, None) {
        Ok(s) => {
            if s.layers.is_empty() {
                out_line!(
                    "  no settings files (looked in ~/.claude, {}, .claude/, .keel/)",
                    keel_home.display()
                );
            }
            for l in &s.layers {
                out_line!("  ok   {} ({})", l.label(), l.scope.as_str());
            }
            for line in s.unknown_keys() {
                out_line!("  WARN {line}");
            }
            match crate::hooks::HookConfig::from_settings(&s) {
                Ok(hooks) => {
                    for w in &hooks.warnings {
                        out_line!("  WARN {w}");
                    }
                }
                Err(e) => {
                    problems += 1;
                    out_line!("  FAIL {e}");
                }
            }
            Some(s)
        }
        Err(e) => {
            problems += 1;
            out_line!("  FAIL {e}");
            None
        }
    };

    if let Some(s) = &settings {
        let options = crate::launch::options::Options {
            model: model.clone(),
            ..Default::default()
        };
        out_line!("\nSettings in force (the first source present wins: flag, environment, the last settings layer)");
        for v in crate::launch::provenance::in_force(&options, s) {
            out_line!("  {} = {}  (from {})", v.key, v.value, v.origin.describe());
        }
        problems += protections(s, &cwd, &keel_home);
        memory_report(s, &cwd, home.as_deref(), &keel_home);
    }

    out_line!("\nModel access");
    match &settings {
        Some(s) => problems += super::doctor_models::report(provider, model, s, offline).await,
        None => out_line!("  --   skipped: the settings must load first"),
    }

    let caps = sandbox::capabilities();
    out_line!("\nShell commands keel approves on its own (read-only commands, acceptEdits file commands)");
    if caps.jail {
        out_line!(
            "  ok   the read-only jail is in force: such commands cannot write (but their temp dir), reach the \
             network or unix sockets, read credential files, signal or trace other processes, or use capabilities"
        );
    } else {
        out_line!(
            "  --   allow-list fallback: the read-only jail is not available here, so only known programs with \
             known options run without asking (anything else asks)"
        );
    }
    out_line!("  {}   seccomp filters", if caps.seccomp { "ok" } else { "NO" });

    out_line!("\nSandbox (Linux: Landlock + network namespace)");
    match caps.landlock_abi {
        Some(abi) => out_line!("  ok   Landlock ABI {abi}"),
        None => out_line!("  --   Landlock unavailable"),
    }
    out_line!(
        "  {}   file-system writes limited to the working directories",
        if caps.filesystem { "ok" } else { "NO" }
    );
    out_line!(
        "  {}   configuration (.git, .keel, .claude, .mcp.json) kept read-only by a mount namespace",
        if caps.mount_namespace { "ok" } else { "NO" }
    );
    let opens_top = caps.landlock_abi.is_some_and(|abi| abi >= 6);
    out_line!(
        "  {}   new files and directories at the top of a working directory: {}",
        if opens_top { "ok" } else { "--" },
        if opens_top {
            "allowed; a .git, .keel, .claude or .mcp.json a command creates there is moved into quarantine (a .git \
             that runs nothing stays)"
        } else {
            "refused while .git, .keel, .claude or .mcp.json is missing there (Landlock ABI 6 is needed to keep a \
             command from outliving keel's look at what it created)"
        }
    );
    out_line!(
        "  {}   network off (namespace: {}, Landlock TCP rules: {})",
        if caps.network() { "ok" } else { "NO" },
        yes_no(caps.network_namespace),
        yes_no(caps.network_landlock_tcp)
    );
    for p in &caps.problems {
        out_line!("  note {p}");
    }
    let sandbox_config = settings.as_ref().map(|s| SandboxConfig::from_settings(s, false));
    if let Some(config) = &sandbox_config {
        match config {
            Ok(cfg) if cfg.enabled => {
                let enforceable = caps.can_enforce(&cfg.policy(std::slice::from_ref(&cwd), None));
                out_line!(
                    "  {}   sandbox.enabled is set; {}",
                    if enforceable { "ok" } else { "WARN" },
                    if enforceable {
                        "Bash commands will run sandboxed"
                    } else if cfg.fail_if_unavailable {
                        "it cannot be enforced here, so Bash commands will be refused"
                    } else {
                        "it cannot be enforced here, so Bash commands will run unsandboxed (failIfUnavailable: false)"
                    }
                );
            }
            Ok(_) => out_line!("  --   sandbox is off (enable with --sandbox or \"sandbox\": {{\"enabled\": true}})"),
            Err(e) => {
                problems += 1;
                out_line!("  FAIL {e}");
            }
        }
    }

    limits_report(settings.as_ref(), &mut problems);
    if let Some(s) = &settings {
        problems += super::doctor_web::report(s);
    }

    out_line!("\nReads by confined commands (the read-only jail, acceptEdits file commands, the sandbox)");
    let read_settings = match &sandbox_config {
        Some(Ok(cfg)) => cfg.reads.clone(),
        _ => Default::default(),
    };
    let reads = sandbox::reads::ReadScope::new(home.as_deref(), Some(&keel_home), read_settings, Default::default());
    for line in reads.report() {
        out_line!("  {line}");
    }

    out_line!("\nCommands used by tools and hooks");
    for (cmd, why) in [
        ("bash", "Bash tool and hooks"),
        ("git", "project context"),
        ("jq", "many hook scripts"),
    ] {
        match find_in_path(cmd) {
            Some(p) => out_line!("  ok   {cmd} ({})", p.display()),
            None => out_line!("  --   {cmd} not found ({why})"),
        }
    }
    if problems > 0 {
        out_line!("\n{problems} problem(s) found.");
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Which project memory file a session here uses.
fn memory_report(settings: &Settings, cwd: &Path, home: Option<&Path>, keel_home: &Path) {
    out_line!("\nProject memory");
    let on = crate::memory::enabled(settings.flag(&["autoMemoryEnabled"]).ok().flatten());
    if !on {
        out_line!("  --   off (autoMemoryEnabled or KEEL_DISABLE_AUTO_MEMORY / CLAUDE_CODE_DISABLE_AUTO_MEMORY)");
        return;
    }
    let cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    let m = crate::memory::Memory::load(keel_home, home, &cwd);
    let state = if m.problem.is_some() {
        "WARN"
    } else if m.head.is_empty() {
        "--"
    } else {
        "ok"
    };
    out_line!("  {state:<4} {} ({})", m.file.display(), m.origin.describe());
    if let Some(p) = &m.problem {
        out_line!("  WARN it cannot be read: {p}");
    }
}

fn yes_no(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

fn find_in_path(cmd: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(cmd))
        .find(|p| Path::new(p).is_file())
}

/// Which limits bound each shell command here, and by what (`sandbox.limits`).
fn limits_report(settings: Option<&Settings>, problems: &mut u32) {
    out_line!("\nLimits on each shell command (sandbox.limits)");
    let limits = match settings.map(sandbox::Limits::from_settings) {
        Some(Ok(l)) => l,
        Some(Err(e)) => {
            *problems += 1;
            out_line!("  FAIL {e}");
            return;
        }
        None => sandbox::Limits::default(),
    };
    let support = sandbox::cgroup::support();
    let n = limits.max_processes;
    match support.processes {
        Some(by) => out_line!("  ok   processes per command: at most {n} at once ({by} pids controller)"),
        None if sandbox::limits::process_rlimit_applies() => out_line!(
            "  ok   processes per command: at most {n} beyond what this user already runs (RLIMIT_NPROC: no pids \
             cgroup controller is available to keel)"
        ),
        None => out_line!(
            "  WARN processes per command: NOT bounded (no pids cgroup controller is available to keel, and the \
             kernel does not apply RLIMIT_NPROC to root)"
        ),
    }
    match (support.memory, limits.memory_mib()) {
        (Some(by), Some(mib)) => out_line!("  ok   memory per command: at most {mib} MiB ({by} memory controller)"),
        (Some(_), None) => out_line!(
            "  WARN memory per command: unbounded (the machine's memory is unknown; set sandbox.limits.maxMemoryMiB)"
        ),
        (None, _) => out_line!(
            "  WARN memory per command: unbounded (no memory cgroup controller is available to keel: it needs a \
             cgroup v2 subtree delegated with the memory controller, or a writable v1 memory hierarchy)"
        ),
    }
}
