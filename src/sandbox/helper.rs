//! `keel __sandbox-exec`: confines itself by a [`Policy`], then execs the command.
//!
//! Runs before any async runtime or thread exists, so restricting the process is safe. Every
//! step either succeeds or the command does not run (exit status 125 and a message).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope,
};

use super::fs_rules::{self, FS_ABI};
use super::limits::{self, Limits};
use super::lockdown::{self, SocketRule};
use super::policy::{Kind, Policy};
use super::{Capabilities, HELPER_ARG};
use super::{cgroup, contain};
use crate::console::err_line;

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
        // Read by keel itself, not a person.
        let json = serde_json::to_string(&caps).unwrap_or_else(|_| "{}".into());
        let _ = writeln!(std::io::stdout(), "{json}");
        return ExitCode::SUCCESS;
    }
    let (opts, args) = match Options::parse(args) {
        Ok(v) => v,
        Err(e) => return fail(&e),
    };
    let (mut policy, at) = if args.get(..2) == Some(&["--kind".to_string(), "none".to_string()]) {
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
    // Names keel looks at after the command may only be left open while the command cannot
    // kill this process (a nested Landlock domain scoping signals, ABI 6): otherwise what it
    // started could outlive it, and create them after keel looked. They are reserved instead.
    let guard_helper = policy.is_some() && kernel_abi().is_some_and(|abi| abi >= 6);
    if let Some(p) = &mut policy
        && !guard_helper
    {
        p.reserved.extend(opts.sweep.iter().cloned());
    }
    // Before confinement: the jail cannot write to the cgroup hierarchy.
    let joined = match opts.cap {
        Some(_) => cgroup::join(opts.limits.as_ref()),
        None => cgroup::Joined::default(),
    };
    let shm_size = opts.limits.and_then(|l| l.max_memory);
    let confined = match &policy {
        Some(p) => match confine(p, shm_size) {
            Ok(c) => c,
            Err(e) => return fail(&e),
        },
        None => Confined::default(),
    };
    if let Some(l) = opts.limits
        && !joined.processes
        && limits::process_rlimit_applies()
        && let Err(e) = limits::bound_processes(l.max_processes, confined.user_namespace)
    {
        return fail(&e);
    }
    match opts.cap {
        Some(cap) => contain::run(program, program_args, cap, guard_helper),
        None => contain::exec(program, program_args),
    }
}

/// The helper's own options, before the policy: `--cap BYTES` (contain the command and cap
/// its output), `--max-procs N` and `--max-memory BYTES` (its limits), `--sweep PATH` (a name
/// keel looks at after the command, which the command may therefore create).
#[derive(Debug, Default)]
struct Options {
    cap: Option<u64>,
    limits: Option<Limits>,
    sweep: Vec<PathBuf>,
}

impl Options {
    fn parse(mut args: &[String]) -> Result<(Options, &[String]), String> {
        let mut opts = Options::default();
        let (mut procs, mut memory) = (None, None);
        loop {
            let number = |what: &str| {
                args.get(1)
                    .and_then(|v| v.parse::<u64>().ok())
                    .ok_or_else(|| format!("{} needs {what}", args[0]))
            };
            match args.first().map(String::as_str) {
                Some("--cap") => opts.cap = Some(number("a number of bytes")?),
                Some("--max-procs") => procs = Some(number("a number of processes")?),
                Some("--max-memory") => memory = Some(number("a number of bytes")?),
                Some("--sweep") => opts
                    .sweep
                    .push(PathBuf::from(args.get(1).ok_or("--sweep needs a path")?)),
                _ => break,
            }
            args = &args[2..];
        }
        opts.limits = procs.map(|max_processes| Limits {
            max_processes,
            max_memory: memory,
        });
        Ok((opts, args))
    }
}

/// What confining this process set up, which later steps need to know.
#[derive(Debug, Clone, Copy, Default)]
pub struct Confined {
    /// It entered a user namespace of its own (`RLIMIT_NPROC` then counts from there).
    pub user_namespace: bool,
    /// `/dev/shm` is a fresh tmpfs of its own.
    pub private_shm: bool,
}

fn fail(msg: &str) -> ExitCode {
    err_line!("keel sandbox: {msg}; the command was not run");
    ExitCode::from(SETUP_FAILED)
}

/// Applies `policy` to this process (and so to everything it execs). `shm_size`: the bytes
/// the command's own `/dev/shm` may hold (its memory limit; the kernel's default without one).
pub fn confine(policy: &Policy, shm_size: Option<u64>) -> Result<Confined, String> {
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
    // A mount namespace also gives the command a `/dev/shm` of its own; the jail has one only
    // where it gets a user namespace anyway (elsewhere a user namespace would show every file
    // of another owner as `nobody`'s, and its `/dev/shm` stays closed by Landlock instead).
    let want_mount = must_mount || freeze || user;
    let mut confined = Confined::default();
    let mut in_netns = false;
    let mut mounted = false;
    match lockdown::enter_namespaces(user, want_mount, want_netns) {
        Ok(userns) => {
            in_netns = want_netns;
            mounted = want_mount;
            confined.user_namespace = userns;
        }
        Err(e) => {
            if must_mount || policy.kind == Kind::Sandbox {
                return Err(format!("cannot protect configuration files ({e})"));
            }
            // Without a network namespace the seccomp filter below refuses every socket;
            // without a mount namespace workspace commands rely on the check alone.
            if let Ok(userns) = lockdown::enter_namespaces(user, false, want_netns) {
                in_netns = want_netns;
                confined.user_namespace = userns;
            } else if user {
                confined.user_namespace = lockdown::enter_namespaces(false, false, false)?;
            }
        }
    }
    if mounted && policy.kind == Kind::Jail {
        // The jail needs its mount namespace only for `/dev/shm`: without it, that stays
        // closed by Landlock. (Mounts are never made before they are private.)
        confined.private_shm = make_mounts_private().is_ok() && private_shm(shm_size).unwrap_or(false);
    } else if mounted {
        make_mounts_private()?;
        if freeze {
            freeze_outside(&policy.writable)?;
        }
        confined.private_shm = match private_shm(shm_size) {
            Ok(done) => done,
            // The write sandbox grants `/dev/shm`: never the host's.
            Err(e) if policy.kind == Kind::Sandbox => return Err(e),
            Err(_) => false,
        };
        protect(&policy.protected)?;
        // The working directory was looked up before these mounts: look it up again, or
        // relative paths would go on through the mounts underneath.
        let cwd = std::env::current_dir().map_err(|e| format!("cannot find the working directory: {e}"))?;
        std::env::set_current_dir(&cwd).map_err(|e| format!("cannot enter {}: {e}", cwd.display()))?;
    }
    // The domain lists' way out: a loopback port bridged to keel's proxy, started before this
    // process is confined (the bridge needs the proxy's unix socket, which the command may
    // not open).
    let bridge = match &policy.proxy {
        Some(socket) if policy.kind == Kind::Sandbox && !policy.allow_network => {
            if !in_netns {
                return Err("the network domain lists need a network namespace, which could not be created".into());
            }
            let (listener, port) = super::bridge::listen()?;
            let url = format!("http://127.0.0.1:{port}");
            for var in super::bridge::PROXY_VARS {
                // SAFETY: the helper has a single thread (the bridge runs in a forked child).
                unsafe { std::env::set_var(var, &url) };
            }
            for var in ["NO_PROXY", "no_proxy"] {
                // SAFETY: as above.
                unsafe { std::env::remove_var(var) };
            }
            Some((listener, port, socket))
        }
        _ => None,
    };
    restrict_files(policy, confined.private_shm, bridge.as_ref().map(|b| b.1))?;
    if let Some((listener, _, socket)) = bridge {
        super::bridge::fork(listener, socket)?;
    }
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
    lockdown::apply_seccomp(sockets, policy.kind == Kind::Jail)?;
    Ok(confined)
}

/// Mounts a fresh tmpfs on `/dev/shm` in this process's private mount namespace: the command
/// can use shared memory (Python's multiprocessing, for one) without seeing or touching the
/// host's, and what it leaves there goes with the namespace. Its pages count towards the
/// command's memory limit. `Ok(false)`: there is no `/dev/shm` here.
fn private_shm(size: Option<u64>) -> Result<bool, String> {
    use nix::mount::{MsFlags, mount};
    let shm = Path::new("/dev/shm");
    if !shm.is_dir() {
        return Ok(false);
    }
    let mut data = "mode=1777".to_string();
    if let Some(bytes) = size {
        data.push_str(&format!(",size={bytes}"));
    }
    mount(
        Some("tmpfs"),
        shm,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        Some(data.as_str()),
    )
    .map_err(|e| format!("cannot give the command a /dev/shm of its own: {e}"))?;
    Ok(true)
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
fn restrict_files(policy: &Policy, private_shm: bool, proxy_port: Option<u16>) -> Result<(), String> {
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
    if let Some(port) = proxy_port {
        created = created
            .add_rule(landlock::NetPort::new(port, AccessNet::ConnectTcp))
            .map_err(err)?;
    }
    let mut grants = fs_rules::grants(policy);
    if private_shm {
        grants.push(fs_rules::Grant {
            path: "/dev/shm".into(),
            access: fs_rules::read_rights() | fs_rules::write_rights(),
        });
    }
    for g in grants {
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
                proxy: None,
            };
            restrict_files(&policy, false, None).is_ok()
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
        proxy: None,
    };
    if confine(&policy, None).is_err() {
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
