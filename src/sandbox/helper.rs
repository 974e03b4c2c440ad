//! `keel __sandbox-exec`: confines itself by a [`Policy`], then execs the command.
//!
//! Runs before any async runtime or thread exists, so restricting the process is safe. Every
//! step either succeeds or the command does not run (exit status 125 and a message).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope,
};

use super::contain;
use super::fs_rules::{self, FS_ABI};
use super::lockdown::{self, SocketRule};
use super::policy::{Kind, Policy};
use super::{Capabilities, HELPER_ARG};

/// Exit status when the confinement could not be set up (the command did not run).
pub const SETUP_FAILED: u8 = 125;

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
    let mut args = args;
    let mut cap = None;
    if args.first().map(String::as_str) == Some("--cap") {
        match args.get(1).and_then(|v| v.parse::<u64>().ok()) {
            Some(c) => cap = Some(c),
            None => return fail("--cap needs a number of bytes"),
        }
        args = &args[2..];
    }
    let (policy, at) = if args.get(..2) == Some(&["--kind".to_string(), "none".to_string()]) {
        match args.iter().position(|a| a == "--") {
            Some(i) => (None, i + 1),
            None => return fail("no command to run"),
        }
    } else {
        match Policy::from_args(args) {
            Ok((p, at)) => (Some(p), at),
            Err(e) => return fail(&e),
        }
    };
    let Some((program, program_args)) = args[at..].split_first() else {
        return fail("no command to run");
    };
    if cap.is_some() {
        // Before confinement: the jail cannot write to the cgroup hierarchy.
        contain::join_cgroup();
    }
    if let Some(policy) = &policy
        && let Err(e) = confine(policy)
    {
        return fail(&e);
    }
    match cap {
        Some(cap) => contain::run(program, program_args, cap),
        None => contain::exec(program, program_args),
    }
}

fn fail(msg: &str) -> ExitCode {
    eprintln!("keel sandbox: {msg}; the command was not run");
    ExitCode::from(SETUP_FAILED)
}

/// Applies `policy` to this process (and so to everything it execs).
pub fn confine(policy: &Policy) -> Result<(), String> {
    let root = nix::unistd::geteuid().is_root();
    let must_mount = !policy.protected.is_empty();
    // Landlock governs file contents and names, not modes, owners, times or attributes:
    // commands that may write see everything outside their writable paths as read-only
    // mounts (the jail refuses those calls by seccomp instead).
    let freeze = policy.kind != Kind::Jail;
    let want_netns = policy.kind == Kind::Sandbox && !policy.allow_network;
    // As root the jail gets its own user namespace, so no capability reaches anything outside
    // it even before all are dropped. (Commands that write keep root's view of file owners.)
    let user = root && policy.kind == Kind::Jail;
    let mut in_netns = false;
    let mut mounted = false;
    match lockdown::enter_namespaces(user, must_mount || freeze, want_netns) {
        Ok(()) => {
            in_netns = want_netns;
            mounted = must_mount || freeze;
        }
        Err(e) => {
            if must_mount || policy.kind == Kind::Sandbox {
                return Err(format!("cannot protect configuration files ({e})"));
            }
            // Without a network namespace the seccomp filter below refuses every socket;
            // without a mount namespace workspace commands rely on the check alone.
            if lockdown::enter_namespaces(user, false, want_netns).is_ok() {
                in_netns = want_netns;
            } else if user {
                lockdown::enter_namespaces(false, false, false)?;
            }
        }
    }
    if mounted {
        make_mounts_private()?;
        if freeze {
            let mut writable = policy.writable.clone();
            if policy.kind == Kind::Sandbox {
                writable.push("/dev/shm".into());
            }
            freeze_outside(&writable)?;
        }
        protect(&policy.protected)?;
        // The working directory was looked up before these mounts: look it up again, or
        // relative paths would go on through the mounts underneath.
        let cwd = std::env::current_dir().map_err(|e| format!("cannot find the working directory: {e}"))?;
        std::env::set_current_dir(&cwd).map_err(|e| format!("cannot enter {}: {e}", cwd.display()))?;
    }
    restrict_files(policy)?;
    let keep: &[u32] = if policy.kind == Kind::Sandbox && root {
        lockdown::FILE_CAPS
    } else {
        &[]
    };
    lockdown::drop_capabilities(keep)?;
    let sockets = match policy.kind {
        Kind::Jail | Kind::Workspace => SocketRule::None,
        Kind::Sandbox if policy.allow_network => SocketRule::Any,
        Kind::Sandbox if in_netns => SocketRule::NoUnix,
        Kind::Sandbox => SocketRule::None,
    };
    lockdown::apply_seccomp(sockets, policy.kind == Kind::Jail)
}

/// Makes each path read-only for this process and its children: a read-only bind mount of
/// the path onto itself, in the private mount namespace entered before. A mount point cannot
/// be renamed, removed or replaced either.
fn protect(paths: &[PathBuf]) -> Result<(), String> {
    use nix::mount::{MsFlags, mount};
    for p in paths {
        mount(
            Some(p.as_path()),
            p.as_path(),
            None::<&str>,
            MsFlags::MS_BIND | MsFlags::MS_REC,
            None::<&str>,
        )
        .map_err(|e| format!("cannot protect {}: {e}", p.display()))?;
        // A remount inside a user namespace must keep the flags the mount already has.
        let kept = locked_flags(p);
        mount(
            None::<&str>,
            p.as_path(),
            None::<&str>,
            MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | kept,
            None::<&str>,
        )
        .map_err(|e| format!("cannot make {} read-only: {e}", p.display()))?;
    }
    Ok(())
}

/// Keeps this process's mount changes to its own mount namespace.
fn make_mounts_private() -> Result<(), String> {
    use nix::mount::{MsFlags, mount};
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .map_err(|e| format!("cannot make mounts private: {e}"))
}

/// Makes every mount read-only, then each writable path a writable bind of itself: outside
/// them no file's mode, owner, times or attributes can change (`EROFS`), whatever
/// capabilities the command holds. Device nodes stay usable on a read-only mount.
fn freeze_outside(writable: &[PathBuf]) -> Result<(), String> {
    use nix::mount::{MsFlags, mount};
    set_read_only(Path::new("/"), true, true).map_err(|e| format!("cannot make mounts read-only: {e}"))?;
    for w in writable {
        if w.symlink_metadata().is_err() {
            continue;
        }
        mount(
            Some(w.as_path()),
            w.as_path(),
            None::<&str>,
            MsFlags::MS_BIND | MsFlags::MS_REC,
            None::<&str>,
        )
        .map_err(|e| format!("cannot bind {}: {e}", w.display()))?;
        // Mounts below a writable path that were read-only before stay so (the kernel keeps
        // them locked); then only the top is made writable.
        set_read_only(w, false, true)
            .or_else(|_| set_read_only(w, false, false))
            .map_err(|e| format!("cannot make {} writable: {e}", w.display()))?;
    }
    Ok(())
}

/// `mount_setattr(2)`: sets or clears `MOUNT_ATTR_RDONLY` on the mount at `path` (and the
/// mounts below it when `recursive`).
fn set_read_only(path: &Path, read_only: bool, recursive: bool) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    #[repr(C)]
    struct MountAttr {
        attr_set: u64,
        attr_clr: u64,
        propagation: u64,
        userns_fd: u64,
    }
    const MOUNT_ATTR_RDONLY: u64 = 0x1;
    const AT_RECURSIVE: libc::c_uint = 0x8000;
    let attr = MountAttr {
        attr_set: if read_only { MOUNT_ATTR_RDONLY } else { 0 },
        attr_clr: if read_only { 0 } else { MOUNT_ATTR_RDONLY },
        propagation: 0,
        userns_fd: 0,
    };
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    let flags = if recursive { AT_RECURSIVE } else { 0 };
    // SAFETY: a NUL-terminated path and a mount_attr of the size passed, both alive for the
    // call; mount_setattr reads them and writes nothing.
    let r = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            c_path.as_ptr(),
            flags,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

fn locked_flags(p: &Path) -> nix::mount::MsFlags {
    use nix::mount::MsFlags;
    use nix::sys::statvfs::{FsFlags, statvfs};
    let Ok(s) = statvfs(p) else { return MsFlags::empty() };
    let f = s.flags();
    let mut out = MsFlags::empty();
    for (fs, ms) in [
        (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
        (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
        (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
        (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
        (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
        (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
    ] {
        if f.contains(fs) {
            out |= ms;
        }
    }
    out
}

/// The kernel's Landlock ABI version (the documented version query of
/// `landlock_create_ruleset`), or `None` when Landlock is absent or disabled.
pub fn kernel_abi() -> Option<i32> {
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
    (v > 0).then_some(v as i32)
}

/// Applies the policy's Landlock rules: file-system reads and writes, TCP (without the
/// network), and — from ABI 6 — signals and abstract unix sockets scoped to the command.
fn restrict_files(policy: &Policy) -> Result<(), String> {
    let abi = kernel_abi().ok_or("Landlock is not available in this kernel")?;
    let scoped = abi >= 6;
    if !scoped && policy.kind != Kind::Sandbox {
        return Err(format!(
            "Landlock ABI {abi} cannot scope signals and unix sockets (ABI 6 needed)"
        ));
    }
    let err = |e: landlock::RulesetError| format!("cannot apply the file-system rules: {e}");
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(FS_ABI))
        .map_err(err)?;
    if !policy.allow_network {
        ruleset = ruleset
            .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
            .map_err(err)?;
    }
    if scoped {
        ruleset = ruleset.scope(Scope::from_all(ABI::V6)).map_err(err)?;
    }
    let mut created = ruleset.create().map_err(err)?;
    for g in fs_rules::grants(policy) {
        let Ok(fd) = PathFd::new(&g.path) else { continue };
        let is_dir = std::fs::metadata(&g.path).is_ok_and(|m| m.is_dir());
        let access = if is_dir {
            g.access
        } else {
            g.access & AccessFs::from_file(FS_ABI)
        };
        if access.is_empty() {
            continue;
        }
        created = created.add_rule(PathBeneath::new(fd, access)).map_err(err)?;
    }
    match created.restrict_self().map_err(err)?.ruleset {
        RulesetStatus::NotEnforced => Err("Landlock is not available in this kernel".into()),
        RulesetStatus::PartiallyEnforced if policy.kind != Kind::Sandbox => {
            Err("this kernel enforces the jail's Landlock rules only in part".into())
        }
        _ => Ok(()),
    }
}

/// Tries each mechanism in a child process so this probe process can report honestly.
fn probe_here() -> Capabilities {
    let mut caps = Capabilities {
        landlock_abi: kernel_abi(),
        ..Capabilities::default()
    };
    if caps.landlock_abi.is_none() {
        caps.problems.push("Landlock is not enabled in this kernel".into());
    }
    let scratch = tempfile::tempdir().ok();
    caps.filesystem = scratch.as_ref().is_some_and(|dir| {
        in_child(|| {
            let policy = Policy {
                kind: Kind::Sandbox,
                writable: vec![dir.path().to_path_buf()],
                protected: Vec::new(),
                reserved: Vec::new(),
                private: Vec::new(),
                readable: Vec::new(),
                hidden: Vec::new(),
                allow_network: true,
                tmp_dir: None,
            };
            restrict_files(&policy).is_ok()
                && std::fs::write(dir.path().join("ok"), b"x").is_ok()
                && std::fs::write("/keel-sandbox-probe", b"x").is_err()
        })
    });
    if !caps.filesystem && caps.landlock_abi.is_some() {
        caps.problems.push("Landlock rules could not be enforced".into());
    }
    caps.network_namespace = in_child(|| lockdown::enter_namespaces(false, false, true).is_ok());
    if !caps.network_namespace {
        caps.problems
            .push("cannot create a network namespace (user namespaces may be disabled)".into());
    }
    caps.mount_namespace = in_child(|| lockdown::enter_namespaces(false, true, false).is_ok());
    if !caps.mount_namespace {
        caps.problems
            .push("cannot create a mount namespace (user namespaces may be disabled)".into());
    }
    caps.network_landlock_tcp = caps.landlock_abi.is_some_and(|a| a >= 4);
    caps.seccomp = in_child(|| lockdown::apply_seccomp(SocketRule::NoUnix, false).is_ok());
    if !caps.seccomp {
        caps.problems.push("seccomp filters are not available".into());
    }
    caps.jail = scratch.as_ref().is_some_and(|dir| {
        let secret = dir.path().join("secret");
        let _ = std::fs::write(&secret, b"s");
        in_child(|| probe_jail(dir.path(), &secret))
    });
    if !caps.jail {
        caps.problems.push(match caps.landlock_abi {
            Some(a) if a < 6 => format!("the read-only jail needs Landlock ABI 6 (this kernel has {a})"),
            _ => "the read-only jail could not be set up".into(),
        });
    }
    caps
}

/// Sets up a jail and checks it holds: no writes, the hidden file unreadable and its mode
/// unchangeable, no sockets.
fn probe_jail(dir: &Path, secret: &Path) -> bool {
    let policy = Policy {
        kind: Kind::Jail,
        writable: Vec::new(),
        protected: Vec::new(),
        reserved: Vec::new(),
        private: Vec::new(),
        readable: Vec::new(),
        hidden: vec![secret.to_path_buf()],
        allow_network: false,
        tmp_dir: None,
    };
    if confine(&policy).is_err() {
        return false;
    }
    // SAFETY: socket(2) with constant arguments; a returned descriptor is closed at exit.
    let sock = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0) };
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(dir.join("w"), b"x").is_err()
        && std::fs::read(secret).is_err()
        && std::fs::set_permissions(secret, std::fs::Permissions::from_mode(0o644)).is_err()
        && sock < 0
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
