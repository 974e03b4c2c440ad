//! `keel doctor`: what this machine and this configuration support.

use std::path::Path;
use std::process::ExitCode;

use super::args::ProviderKind;
use crate::config::paths;
use crate::config::settings::Settings;
use crate::sandbox::{self, SandboxConfig};

pub async fn run(provider: Option<ProviderKind>, model: Option<String>, offline: bool) -> ExitCode {
    let mut problems = 0;
    println!(
        "keel {} on {} ({})",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::OS,
        std::env::consts::ARCH
    );

    let cwd = std::env::current_dir().unwrap_or_else(|_| ".".into());
    let home = dirs::home_dir();
    let keel_home = paths::keel_home().unwrap_or_else(|| cwd.join(".keel"));
    println!("\nSettings");
    let settings = match Settings::load(home.as_deref(), &keel_home, &cwd, None) {
        Ok(s) => {
            if s.layers.is_empty() {
                println!(
                    "  no settings files (looked in ~/.claude, {}, .claude/, .keel/)",
                    keel_home.display()
                );
            }
            for l in &s.layers {
                println!("  ok   {} ({})", l.label(), l.scope.as_str());
            }
            Some(s)
        }
        Err(e) => {
            problems += 1;
            println!("  FAIL {e}");
            None
        }
    };

    if let Some(s) = &settings {
        let options = crate::launch::options::Options {
            model: model.clone(),
            ..Default::default()
        };
        println!("\nSettings in force (the first source present wins: flag, environment, the last settings layer)");
        for v in crate::launch::provenance::in_force(&options, s) {
            println!("  {} = {}  (from {})", v.key, v.value, v.origin.describe());
        }
    }

    println!("\nModel access");
    match &settings {
        Some(s) => problems += super::doctor_models::report(provider, model, s, offline).await,
        None => println!("  --   skipped: the settings must load first"),
    }

    let caps = sandbox::capabilities();
    println!("\nShell commands keel approves on its own (read-only commands, acceptEdits file commands)");
    if caps.jail {
        println!(
            "  ok   the read-only jail is in force: such commands cannot write (but their temp dir), reach the \
             network or unix sockets, read credential files, signal or trace other processes, or use capabilities"
        );
    } else {
        println!(
            "  --   allow-list fallback: the read-only jail is not available here, so only known programs with \
             known options run without asking (anything else asks)"
        );
    }
    println!("  {}   seccomp filters", if caps.seccomp { "ok" } else { "NO" });

    println!("\nSandbox (Linux: Landlock + network namespace)");
    match caps.landlock_abi {
        Some(abi) => println!("  ok   Landlock ABI {abi}"),
        None => println!("  --   Landlock unavailable"),
    }
    println!(
        "  {}   file-system writes limited to the working directories",
        if caps.filesystem { "ok" } else { "NO" }
    );
    println!(
        "  {}   configuration (.git, .keel, .claude, .mcp.json) kept read-only by a mount namespace",
        if caps.mount_namespace { "ok" } else { "NO" }
    );
    println!(
        "  {}   network off (namespace: {}, Landlock TCP rules: {})",
        if caps.network() { "ok" } else { "NO" },
        yes_no(caps.network_namespace),
        yes_no(caps.network_landlock_tcp)
    );
    for p in &caps.problems {
        println!("  note {p}");
    }
    let sandbox_config = settings.as_ref().map(|s| SandboxConfig::from_settings(s, false));
    if let Some(config) = &sandbox_config {
        match config {
            Ok(cfg) if cfg.enabled => {
                let enforceable = caps.can_enforce(&cfg.policy(std::slice::from_ref(&cwd), None));
                println!(
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
            Ok(_) => println!("  --   sandbox is off (enable with --sandbox or \"sandbox\": {{\"enabled\": true}})"),
            Err(e) => {
                problems += 1;
                println!("  FAIL {e}");
            }
        }
    }

    println!("\nReads by confined commands (the read-only jail, acceptEdits file commands, the sandbox)");
    let read_settings = match &sandbox_config {
        Some(Ok(cfg)) => cfg.reads.clone(),
        _ => Default::default(),
    };
    let reads = sandbox::reads::ReadScope::new(home.as_deref(), Some(&keel_home), read_settings, Default::default());
    for line in reads.report() {
        println!("  {line}");
    }

    println!("\nCommands used by tools and hooks");
    for (cmd, why) in [
        ("bash", "Bash tool and hooks"),
        ("git", "project context"),
        ("jq", "many hook scripts"),
    ] {
        match find_in_path(cmd) {
            Some(p) => println!("  ok   {cmd} ({})", p.display()),
            None => println!("  --   {cmd} not found ({why})"),
        }
    }
    if problems > 0 {
        println!("\n{problems} problem(s) found.");
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
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
