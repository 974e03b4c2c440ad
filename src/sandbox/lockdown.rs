//! Process-level restrictions the helper applies to itself before it execs the command:
//! namespaces, capabilities and the seccomp filter. Everything here runs in the helper's
//! single thread, before any command code.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
};

/// Enters new namespaces. A user namespace comes first whenever one is needed for the others
/// (not root) or asked for (`user`): then no capability the process holds reaches anything
/// outside the namespace. `Ok(true)`: a user namespace was entered.
pub fn enter_namespaces(user: bool, mount: bool, network: bool) -> Result<bool, String> {
    use nix::sched::{CloneFlags, unshare};
    let mut flags = CloneFlags::empty();
    if mount {
        flags |= CloneFlags::CLONE_NEWNS;
    }
    if network {
        flags |= CloneFlags::CLONE_NEWNET;
    }
    let root = nix::unistd::geteuid().is_root();
    if !user && !flags.is_empty() && root {
        return unshare(flags).map(|()| false).map_err(|e| format!("unshare: {e}"));
    }
    if !user && flags.is_empty() {
        return Ok(false);
    }
    let uid = nix::unistd::geteuid();
    let gid = nix::unistd::getegid();
    unshare(CloneFlags::CLONE_NEWUSER | flags).map_err(|e| format!("unshare: {e}"))?;
    // Inside the new namespace only our own ids can be mapped (onto themselves), so files
    // keep their owners as far as this process is concerned.
    let _ = std::fs::write("/proc/self/setgroups", "deny");
    std::fs::write("/proc/self/uid_map", format!("{uid} {uid} 1")).map_err(|e| format!("uid_map: {e}"))?;
    std::fs::write("/proc/self/gid_map", format!("{gid} {gid} 1")).map_err(|e| format!("gid_map: {e}"))?;
    Ok(true)
}

/// Capabilities a write-sandboxed command run by root keeps: those of ordinary file work.
pub const FILE_CAPS: &[u32] = &[
    0, // CAP_CHOWN
    1, // CAP_DAC_OVERRIDE
    3, // CAP_FOWNER
    4, // CAP_FSETID
];

/// Drops every capability not in `keep`, for this process and everything it execs: the
/// bounding set, the ambient set, the inheritable, permitted and effective sets, and root's
/// special treatment on exec (securebits).
pub fn drop_capabilities(keep: &[u32]) -> Result<(), String> {
    // SAFETY: plain prctl/capset calls on this process with constant arguments.
    unsafe {
        let _ = libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
        let has_setpcap = capable(8);
        if has_setpcap {
            for cap in 0..64u32 {
                if keep.contains(&cap) {
                    continue;
                }
                if libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) != 0 {
                    // EINVAL past the last capability the kernel knows.
                    break;
                }
            }
            // SECBIT_NOROOT | SECBIT_NO_SETUID_FIXUP | SECBIT_KEEP_CAPS_LOCKED and their locks:
            // uid 0 gains nothing on exec, and the bits cannot be changed back.
            const BITS: libc::c_ulong = 0x01 | 0x02 | 0x04 | 0x08 | 0x20;
            if libc::prctl(libc::PR_SET_SECUREBITS, BITS, 0, 0, 0) != 0 {
                return Err(format!("securebits: {}", std::io::Error::last_os_error()));
            }
        }
        let mask: u64 = keep.iter().fold(0, |m, c| m | (1u64 << c));
        let header = CapHeader {
            version: 0x2008_0522, // _LINUX_CAPABILITY_VERSION_3
            pid: 0,
        };
        let lo = (mask & 0xffff_ffff) as u32;
        let hi = (mask >> 32) as u32;
        let data = [
            CapData {
                effective: lo,
                permitted: lo,
                inheritable: 0,
            },
            CapData {
                effective: hi,
                permitted: hi,
                inheritable: 0,
            },
        ];
        if !keep.is_empty() {
            // Keep only what is held; asking for more than the permitted set fails.
            let mut current = [CapData::default(); 2];
            if libc::syscall(libc::SYS_capget, &header as *const CapHeader, current.as_mut_ptr()) == 0 {
                let data = [
                    CapData {
                        effective: lo & current[0].permitted,
                        permitted: lo & current[0].permitted,
                        inheritable: 0,
                    },
                    CapData {
                        effective: hi & current[1].permitted,
                        permitted: hi & current[1].permitted,
                        inheritable: 0,
                    },
                ];
                return capset(&header, &data);
            }
        }
        capset(&header, &data)
    }
}

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

unsafe fn capset(header: &CapHeader, data: &[CapData; 2]) -> Result<(), String> {
    // SAFETY: header and two data structs of the v3 layout, as capset(2) expects.
    let r = unsafe { libc::syscall(libc::SYS_capset, header as *const CapHeader, data.as_ptr()) };
    if r == 0 {
        Ok(())
    } else {
        Err(format!("capset: {}", std::io::Error::last_os_error()))
    }
}

/// Whether this process holds capability `cap` in its effective set.
fn capable(cap: u32) -> bool {
    let header = CapHeader {
        version: 0x2008_0522,
        pid: 0,
    };
    let mut data = [CapData::default(); 2];
    // SAFETY: capget with a v3 header and room for two data structs.
    let r = unsafe { libc::syscall(libc::SYS_capget, &header as *const CapHeader, data.as_mut_ptr()) };
    r == 0 && data[(cap / 32) as usize].effective & (1 << (cap % 32)) != 0
}

/// What the seccomp filter refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SocketRule {
    /// No socket of any family (the jail): no network, no unix sockets.
    None,
    /// No unix sockets (other families meet an empty network namespace).
    NoUnix,
    /// Sockets allowed (the sandbox with the network on).
    Any,
}

/// Installs the filter: no new namespaces or mounts, no tracing, no kernel keyrings, BPF,
/// perf or io_uring (whose operations seccomp cannot see), no terminal input injection, no
/// resource limits set on other processes, and sockets per `sockets`. `read_only` (the jail)
/// also refuses changes of file metadata — modes, owners, times, extended attributes —
/// which Landlock does not govern. Needs `no_new_privs` (set by the Landlock step before).
pub fn apply_seccomp(sockets: SocketRule, read_only: bool) -> Result<(), String> {
    let arch: seccompiler::TargetArch = std::env::consts::ARCH
        .try_into()
        .map_err(|e| format!("seccomp: {e:?}"))?;
    let eperm = build(sockets, read_only, arch)?;
    seccompiler::apply_filter(&eperm).map_err(|e| format!("seccomp: {e}"))?;
    // clone3 passes its flags in memory, where a filter cannot look: ENOSYS makes the C
    // library fall back to clone, whose flags the first filter checks.
    let mut rules = BTreeMap::new();
    rules.insert(libc::SYS_clone3, Vec::new());
    let enosys: BpfProgram = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )
    .and_then(TryInto::try_into)
    .map_err(|e| format!("seccomp: {e}"))?;
    seccompiler::apply_filter(&enosys).map_err(|e| format!("seccomp: {e}"))
}

/// System calls that change a file's metadata (Landlock governs content and names only).
/// `fchmodat2`, `setxattrat` and `removexattrat` are newer than some C libraries; their
/// numbers are the same on every architecture.
fn metadata_calls() -> Vec<i64> {
    let mut calls = vec![
        libc::SYS_fchmod,
        libc::SYS_fchmodat,
        452, // fchmodat2
        libc::SYS_fchown,
        libc::SYS_fchownat,
        libc::SYS_utimensat,
        libc::SYS_setxattr,
        libc::SYS_lsetxattr,
        libc::SYS_fsetxattr,
        libc::SYS_removexattr,
        libc::SYS_lremovexattr,
        libc::SYS_fremovexattr,
        463, // setxattrat
        466, // removexattrat
    ];
    #[cfg(target_arch = "x86_64")]
    calls.extend([
        libc::SYS_chmod,
        libc::SYS_chown,
        libc::SYS_lchown,
        libc::SYS_utime,
        libc::SYS_utimes,
        libc::SYS_futimesat,
    ]);
    calls
}

fn build(sockets: SocketRule, read_only: bool, arch: seccompiler::TargetArch) -> Result<BpfProgram, String> {
    let err = |e: seccompiler::BackendError| format!("seccomp: {e}");
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for nr in [
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_bpf,
        libc::SYS_perf_event_open,
        libc::SYS_userfaultfd,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_unshare,
        libc::SYS_setns,
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_open_tree,
        libc::SYS_move_mount,
        libc::SYS_fsopen,
        libc::SYS_fsmount,
        libc::SYS_fspick,
        libc::SYS_mount_setattr,
        libc::SYS_kexec_load,
        libc::SYS_init_module,
        libc::SYS_finit_module,
        libc::SYS_delete_module,
    ] {
        rules.insert(nr, Vec::new());
    }
    // New namespaces through clone.
    const NS_FLAGS: u64 = (libc::CLONE_NEWUSER
        | libc::CLONE_NEWNS
        | libc::CLONE_NEWNET
        | libc::CLONE_NEWPID
        | libc::CLONE_NEWIPC
        | libc::CLONE_NEWUTS
        | libc::CLONE_NEWCGROUP) as u64;
    let clone_flags_arg = if cfg!(target_arch = "s390x") { 1 } else { 0 };
    let mut clone_rules = Vec::new();
    for bit in (0..64).map(|b| 1u64 << b).filter(|b| NS_FLAGS & b != 0) {
        clone_rules.push(
            SeccompRule::new(vec![
                SeccompCondition::new(
                    clone_flags_arg,
                    SeccompCmpArgLen::Qword,
                    SeccompCmpOp::MaskedEq(bit),
                    bit,
                )
                .map_err(err)?,
            ])
            .map_err(err)?,
        );
    }
    rules.insert(libc::SYS_clone, clone_rules);
    // Pushing characters into a terminal's input (TIOCSTI) or a console (TIOCLINUX).
    let mut ioctl_rules = Vec::new();
    for req in [libc::TIOCSTI, libc::TIOCLINUX] {
        ioctl_rules.push(
            SeccompRule::new(vec![
                SeccompCondition::new(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, req).map_err(err)?,
            ])
            .map_err(err)?,
        );
    }
    rules.insert(libc::SYS_ioctl, ioctl_rules);
    // Limits of another process (keel's own: no files, no CPU time, a zero file size that
    // kills it on its next write); the command's own (pid 0) stay settable.
    rules.insert(
        libc::SYS_prlimit64,
        vec![
            SeccompRule::new(vec![
                SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, 0).map_err(err)?,
            ])
            .map_err(err)?,
        ],
    );
    if read_only {
        for nr in metadata_calls() {
            rules.insert(nr, Vec::new());
        }
    }
    match sockets {
        SocketRule::None => {
            rules.insert(libc::SYS_socket, Vec::new());
        }
        SocketRule::NoUnix => {
            rules.insert(
                libc::SYS_socket,
                vec![
                    SeccompRule::new(vec![
                        SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, libc::AF_UNIX as u64)
                            .map_err(err)?,
                    ])
                    .map_err(err)?,
                ],
            );
        }
        SocketRule::Any => {}
    }
    SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .and_then(TryInto::try_into)
    .map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_compile_for_this_architecture() {
        let arch: seccompiler::TargetArch = std::env::consts::ARCH.try_into().unwrap();
        for s in [SocketRule::None, SocketRule::NoUnix, SocketRule::Any] {
            for read_only in [false, true] {
                assert!(!build(s, read_only, arch).unwrap().is_empty());
            }
        }
    }
}
