//! The one way out of a sandboxed command's network namespace when domain lists are set: a
//! loopback port inside the namespace, forwarded to keel's filtering proxy
//! ([`super::proxy`]) through its unix socket. The helper starts it after entering the
//! namespace and before confining itself; the command can then reach that port and nothing
//! else (the namespace holds no other interface, and Landlock allows TCP connections to that
//! port only where the kernel has Landlock's network rules).

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::Path;

/// The variables that point HTTP clients at the proxy (both spellings, as clients differ).
pub const PROXY_VARS: &[&str] = &[
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
];

/// Brings up loopback and listens on a free port of it. Call in the helper's single thread,
/// inside the fresh network namespace, before Landlock refuses binding TCP ports.
pub fn listen() -> Result<(TcpListener, u16), String> {
    loopback_up()?;
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("cannot listen on loopback: {e}"))?;
    let port = listener
        .local_addr()
        .map_err(|e| format!("cannot listen on loopback: {e}"))?
        .port();
    Ok((listener, port))
}

/// Forks the forwarder. Call after the helper entered its Landlock domain (so the helper can
/// still end the forwarder when the command is done: a domain scoping signals reaches only
/// processes inside it) and before the seccomp filter (which refuses unix sockets).
pub fn fork(listener: TcpListener, proxy_socket: &Path) -> Result<(), String> {
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the helper has a single thread here (it runs before any other exists), so the
    // child may run ordinary Rust code.
    match unsafe { libc::fork() } {
        -1 => Err(format!(
            "cannot start the network bridge: {}",
            std::io::Error::last_os_error()
        )),
        0 => {
            // SAFETY: prctl with constant arguments; getppid has no arguments.
            unsafe {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
                if libc::getppid() != parent {
                    libc::_exit(0);
                }
            }
            quiet_stdio();
            forward(listener, proxy_socket);
            // SAFETY: ends the forked child without running the parent's exit handlers.
            unsafe { libc::_exit(0) }
        }
        _ => Ok(()),
    }
}

/// The bridge must not hold the command's output open.
fn quiet_stdio() {
    if let Ok(null) = std::fs::OpenOptions::new().read(true).write(true).open("/dev/null") {
        use std::os::fd::AsRawFd;
        for fd in 0..3 {
            // SAFETY: dup2 onto the standard descriptors of this process.
            unsafe {
                libc::dup2(null.as_raw_fd(), fd);
            }
        }
    }
}

fn forward(listener: TcpListener, proxy_socket: &Path) {
    for conn in listener.incoming() {
        let Ok(client) = conn else { continue };
        let socket = proxy_socket.to_path_buf();
        std::thread::spawn(move || {
            let Ok(upstream) = UnixStream::connect(&socket) else {
                let mut c = client;
                let _ = c.write_all(
                    b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 38\r\nConnection: close\r\n\r\nkeel's sandbox network proxy is gone\r\n",
                );
                return;
            };
            pipe(client, upstream);
        });
    }
}

/// Copies both ways until both sides are done.
fn pipe(client: TcpStream, upstream: UnixStream) {
    let (Ok(mut c_read), Ok(mut u_read)) = (client.try_clone(), upstream.try_clone()) else {
        return;
    };
    let (mut c_write, mut u_write) = (client, upstream);
    let up = std::thread::spawn(move || {
        copy(&mut c_read, &mut u_write);
        let _ = u_write.shutdown(Shutdown::Write);
    });
    copy(&mut u_read, &mut c_write);
    let _ = c_write.shutdown(Shutdown::Write);
    let _ = up.join();
}

fn copy(from: &mut impl Read, to: &mut impl Write) {
    let _ = std::io::copy(from, to);
}

/// Sets `IFF_UP` on `lo` (a new network namespace starts with it down).
fn loopback_up() -> Result<(), String> {
    #[repr(C)]
    struct IfReq {
        name: [u8; 16],
        flags: libc::c_short,
        _pad: [u8; 22],
    }
    let mut req = IfReq {
        name: [0; 16],
        flags: 0,
        _pad: [0; 22],
    };
    req.name[..2].copy_from_slice(b"lo");
    let err = |what: &str| format!("cannot bring up loopback ({what}: {})", std::io::Error::last_os_error());
    // SAFETY: a datagram socket used only for the two interface ioctls below, each given a
    // valid ifreq of the kernel's size, and closed after.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(err("socket"));
        }
        let got = libc::ioctl(fd, libc::SIOCGIFFLAGS as _, &mut req as *mut IfReq);
        req.flags |= libc::IFF_UP as libc::c_short;
        let set = libc::ioctl(fd, libc::SIOCSIFFLAGS as _, &mut req as *mut IfReq);
        let result = if got < 0 {
            Err(err("SIOCGIFFLAGS"))
        } else if set < 0 {
            Err(err("SIOCSIFFLAGS"))
        } else {
            Ok(())
        };
        libc::close(fd);
        result
    }
}
