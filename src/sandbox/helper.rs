//! `keel __sandbox-exec`: applies the sandbox to itself, then execs the command.
//!
//! Runs before any async runtime or thread exists, so restricting the process is safe.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::ExitCode;

use landlock::{
    ABI, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus,
    path_beneath_rules,
};

use super::{Capabilities, HELPER_ARG};

/// Exit status when the sandbox could not be set up (the command did not run).
const SETUP_FAILED: u8 = 125;

/// If this process was started as the sandbox helper, runs it and returns its exit code.
pub fn run_if_requested() -> Option<ExitCode> {
    let mut args = std::env::args_os();
    let _exe = args.next();
    if args.next()? != HELPER_ARG {
        return None;
    }
    let rest: Vec<String> = args.map(|a| a.to_string_lossy().into_owned()).collect();
    Some(run(&rest))
}

fn run(args: &[String]) -> ExitCode {
    if args.first().map(String::as_str) == Some("--probe") {
        let caps = probe_here();
        println!("{}", serde_json::to_string(&caps).unwrap_or_else(|_| "{}".into()));
        return ExitCode::SUCCESS;
    }
    let mut writable = Vec::new();
    let mut protected = Vec::new();
    let mut allow_network = false;
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--write" => {
                let Some(p) = args.get(i + 1) else {
                    return fail("--write needs a path");
                };
                writable.push(PathBuf::from(p));
                i += 2;
            }
            "--protect" => {
                let Some(p) = args.get(i + 1) else {
                    return fail("--protect needs a path");
                };
                protected.push(PathBuf::from(p));
                i += 2;
            }
            "--net" => {
                allow_network = true;
                i += 1;
            }
            "--" => {
                i += 1;
                break;
            }
            other => return fail(&format!("unknown option {other}")),
        }
    }
    let Some((program, program_args)) = args[i..].split_first() else {
        return fail("no command to run");
    };
    match enter_namespaces(!allow_network, !protected.is_empty()) {
        Ok(()) => {
            if let Err(e) = protect(&protected) {
                eprintln!("keel sandbox: warning: {e}; configuration files are writable for this command");
            }
        }
        Err(e) => {
            // Landlock may still block TCP; without either, refuse rather than run unrestricted.
            if !allow_network && !landlock_has_tcp() {
                return fail(&format!("cannot turn the network off: {e}"));
            }
            if !protected.is_empty() {
                eprintln!("keel sandbox: warning: {e}; configuration files are writable for this command");
            }
        }
    }
    match restrict_files(&writable, !allow_network) {
        Ok(RulesetStatus::NotEnforced) => return fail("Landlock is not available in this kernel"),
        Ok(_) => {}
        Err(e) => return fail(&format!("cannot apply the file-system rules: {e}")),
    }
    let err = std::process::Command::new(program).args(program_args).exec();
    eprintln!("keel sandbox: cannot run {program}: {err}");
    ExitCode::from(127)
}

fn fail(msg: &str) -> ExitCode {
    eprintln!("keel sandbox: {msg}; the command was not run");
    ExitCode::from(SETUP_FAILED)
}

/// A fresh network namespace: no interfaces but a down loopback, so nothing connects anywhere.
fn isolate_network() -> Result<(), String> {
    enter_namespaces(true, false)
}

/// Enters a new network namespace (no network) and/or mount namespace (for read-only binds),
/// through a user namespace when not root.
fn enter_namespaces(network: bool, mounts: bool) -> Result<(), String> {
    use nix::sched::{CloneFlags, unshare};
    let mut flags = CloneFlags::empty();
    if network {
        flags |= CloneFlags::CLONE_NEWNET;
    }
    if mounts {
        flags |= CloneFlags::CLONE_NEWNS;
    }
    if flags.is_empty() {
        return Ok(());
    }
    let uid = nix::unistd::geteuid();
    let gid = nix::unistd::getegid();
    if uid.is_root() && unshare(flags).is_ok() {
        return Ok(());
    }
    unshare(CloneFlags::CLONE_NEWUSER | flags).map_err(|e| format!("unshare: {e}"))?;
    // Map our own ids so files keep their owners inside the namespace.
    let _ = std::fs::write("/proc/self/setgroups", "deny");
    std::fs::write("/proc/self/uid_map", format!("{uid} {uid} 1")).map_err(|e| format!("uid_map: {e}"))?;
    std::fs::write("/proc/self/gid_map", format!("{gid} {gid} 1")).map_err(|e| format!("gid_map: {e}"))?;
    Ok(())
}

/// Makes each path read-only for this process and its children: a read-only bind mount of the
/// path onto itself, in the private mount namespace entered before.
fn protect(paths: &[PathBuf]) -> Result<(), String> {
    use nix::mount::{MsFlags, mount};
    if paths.is_empty() {
        return Ok(());
    }
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .map_err(|e| format!("cannot make mounts private: {e}"))?;
    for p in paths {
        mount(
            Some(p.as_path()),
            p.as_path(),
            None::<&str>,
            MsFlags::MS_BIND | MsFlags::MS_REC,
            None::<&str>,
        )
        .map_err(|e| format!("cannot protect {}: {e}", p.display()))?;
        mount(
            None::<&str>,
            p.as_path(),
            None::<&str>,
            MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | MsFlags::MS_REC,
            None::<&str>,
        )
        .map_err(|e| format!("cannot make {} read-only: {e}", p.display()))?;
    }
    Ok(())
}

/// The kernel's Landlock ABI version (the documented version query of
/// `landlock_create_ruleset`), or `None` when Landlock is absent or disabled.
fn kernel_abi() -> Option<ABI> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: a null attribute pointer with size 0 and the VERSION flag is the documented
    // query form; it creates nothing and touches no memory.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    (v > 0).then(|| ABI::from(v as i32))
}

fn landlock_has_tcp() -> bool {
    kernel_abi().is_some_and(|abi| abi >= ABI::V4)
}

/// Handles every write right (reads and execution stay free) and grants them only below
/// `writable`; with `block_tcp`, also handles TCP bind/connect with no port allowed.
fn restrict_files(writable: &[PathBuf], block_tcp: bool) -> Result<RulesetStatus, landlock::RulesetError> {
    let abi = ABI::V5;
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_write(abi))?;
    if block_tcp {
        ruleset = ruleset.handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)?;
    }
    let status = ruleset
        .create()?
        .add_rules(path_beneath_rules(writable, AccessFs::from_write(abi)))?
        .restrict_self()?;
    Ok(status.ruleset)
}

/// Tries each mechanism in a child process so this probe process can report honestly.
fn probe_here() -> Capabilities {
    let mut caps = Capabilities::default();
    match kernel_abi() {
        Some(abi) => caps.landlock_abi = Some(abi as i32),
        None => caps.problems.push("Landlock is not enabled in this kernel".into()),
    }
    caps.filesystem = in_child(|| {
        let dir = std::env::temp_dir();
        matches!(
            restrict_files(&[dir], false),
            Ok(RulesetStatus::FullyEnforced | RulesetStatus::PartiallyEnforced)
        ) && std::fs::write("/keel-sandbox-probe", b"x").is_err()
    });
    if !caps.filesystem && caps.landlock_abi.is_some() {
        caps.problems.push("Landlock rules could not be enforced".into());
    }
    caps.network_namespace = in_child(|| isolate_network().is_ok());
    if !caps.network_namespace {
        caps.problems
            .push("cannot create a network namespace (user namespaces may be disabled)".into());
    }
    caps.network_landlock_tcp = landlock_has_tcp();
    caps
}

/// Runs `f` in a forked child (this process is single-threaded) and returns its verdict.
fn in_child(f: impl FnOnce() -> bool) -> bool {
    use nix::sys::wait::{WaitStatus, waitpid};
    use nix::unistd::{ForkResult, fork};
    // SAFETY: the helper process has a single thread, so fork is sound here.
    match unsafe { fork() } {
        Ok(ForkResult::Child) => {
            let ok = f();
            std::process::exit(if ok { 0 } else { 1 });
        }
        Ok(ForkResult::Parent { child }) => matches!(waitpid(child, None), Ok(WaitStatus::Exited(_, 0))),
        Err(_) => false,
    }
}
