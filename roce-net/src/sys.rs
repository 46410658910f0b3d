//! The raw system calls roce-net makes through `libc::syscall`: two because
//! glibc's wrappers are newer than the artifacts' glibc 2.17 floor
//! (docs/install.md): random bytes for ids and packet sequence numbers, and an
//! atomic rename that refuses to replace; and, in `detach.rs`, the processes
//! made without glibc (`clone(CLONE_VM)` on x86-64) for the one descriptor
//! whose close must not be waited for ([`close_elsewhere`]). Below every module that uses them (the private state
//! files, the names writer, the RDMA probe, the announcer).

/// Fill `buf` from the kernel's random pool (`getrandom(2)`, flags 0); `false`
/// when the kernel cannot (before 3.17, or a short read), so callers fall back.
///
/// The raw system call, not glibc's `getrandom()` wrapper, which glibc added in
/// 2.25: the portable binary and wheel keep a glibc 2.17 floor (docs/install.md).
pub(crate) fn getrandom(buf: &mut [u8]) -> bool {
    // SAFETY: buf is a valid, writable buffer of buf.len() bytes; flags 0.
    let n = unsafe { libc::syscall(libc::SYS_getrandom, buf.as_mut_ptr(), buf.len(), 0u32) };
    usize::try_from(n).is_ok_and(|n| n == buf.len())
}

/// `renameat2(2)` with `flags` (e.g. `RENAME_NOREPLACE`), through the raw system
/// call: glibc's wrapper is 2.28, above the artifacts' glibc 2.17 floor (the
/// system call itself is Linux 3.15). `Err` carries errno.
pub(crate) fn renameat2(
    olddirfd: libc::c_int,
    oldpath: &std::ffi::CStr,
    newdirfd: libc::c_int,
    newpath: &std::ffi::CStr,
    flags: libc::c_uint,
) -> std::io::Result<()> {
    // SAFETY: two valid NUL-terminated paths and directory fds the caller owns.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            olddirfd,
            oldpath.as_ptr(),
            newdirfd,
            newpath.as_ptr(),
            flags,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

mod detach;
pub(crate) use detach::{close_elsewhere, LastUse};

/// `a` as the kernel takes it: the address and its length.
pub(crate) fn sockaddr(a: std::net::SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain old data; all-zero is valid.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match a {
        std::net::SocketAddr::V4(v4) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: v4.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(v4.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_in fits in sockaddr_storage.
            unsafe { std::ptr::write(std::ptr::addr_of_mut!(ss).cast(), sin) };
            std::mem::size_of::<libc::sockaddr_in>()
        }
        std::net::SocketAddr::V6(v6) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: v6.port().to_be(),
                sin6_flowinfo: 0,
                sin6_addr: libc::in6_addr {
                    s6_addr: v6.ip().octets(),
                },
                sin6_scope_id: v6.scope_id(),
            };
            // SAFETY: sockaddr_in6 fits in sockaddr_storage.
            unsafe { std::ptr::write(std::ptr::addr_of_mut!(ss).cast(), sin6) };
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (ss, len as libc::socklen_t)
}

/// An address the kernel gave back; `None` for a family other than IPv4 or IPv6.
pub(crate) fn from_sockaddr(ss: &libc::sockaddr_storage) -> Option<std::net::SocketAddr> {
    match i32::from(ss.ss_family) {
        libc::AF_INET => {
            // SAFETY: the family says it is a sockaddr_in.
            let sin: libc::sockaddr_in = unsafe { std::ptr::read(std::ptr::addr_of!(*ss).cast()) };
            let ip = std::net::Ipv4Addr::from(sin.sin_addr.s_addr.to_ne_bytes());
            Some(std::net::SocketAddr::new(
                std::net::IpAddr::V4(ip),
                u16::from_be(sin.sin_port),
            ))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says it is a sockaddr_in6.
            let sin6: libc::sockaddr_in6 =
                unsafe { std::ptr::read(std::ptr::addr_of!(*ss).cast()) };
            let ip = std::net::Ipv6Addr::from(sin6.sin6_addr.s6_addr);
            Some(std::net::SocketAddr::new(
                std::net::IpAddr::V6(ip),
                u16::from_be(sin6.sin6_port),
            ))
        }
        _ => None,
    }
}

/// Set a socket option to `v`, a value of the option's C type (a
/// `c_int` for most, a `timeval` for the timeouts): the kernel reads
/// `size_of::<T>()` bytes and refuses a size the option does not take.
pub(crate) fn setsockopt<T: Copy>(
    fd: impl std::os::fd::AsFd,
    level: libc::c_int,
    name: libc::c_int,
    v: T,
) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: a value we own and its exact size; the kernel only reads it.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_fd().as_raw_fd(),
            level,
            name,
            std::ptr::addr_of!(v).cast(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// A type a socket option's value can be read into.
///
/// # Safety
///
/// Every bit pattern of `size_of::<Self>()` bytes the kernel may write must be
/// a valid value: plain integers, never `bool`, an enum or a reference.
pub(crate) unsafe trait OptionValue: Copy + Default {}
// SAFETY: integers; every bit pattern is a value.
unsafe impl OptionValue for libc::c_int {}
// SAFETY: as above.
unsafe impl OptionValue for u32 {}
// SAFETY: as above.
unsafe impl OptionValue for u64 {}

/// Read a socket option whose value is a `T` of the option's C type (a
/// `c_int` for most, a `u64` for `SO_NETNS_COOKIE`). A value of another size
/// than `T` is refused (`ErrorKind::InvalidData`) rather than half read; a
/// refusal by the kernel keeps its errno.
pub(crate) fn getsockopt<T: OptionValue>(
    fd: impl std::os::fd::AsFd,
    level: libc::c_int,
    name: libc::c_int,
) -> std::io::Result<T> {
    use std::os::fd::AsRawFd;
    let mut v = T::default();
    let size = std::mem::size_of::<T>() as libc::socklen_t;
    let mut l = size;
    // SAFETY: a buffer of T we own and its exact length; the kernel writes at
    // most `l` bytes into it, and any bytes make a valid T (an integer).
    let rc = unsafe {
        libc::getsockopt(
            fd.as_fd().as_raw_fd(),
            level,
            name,
            std::ptr::addr_of_mut!(v).cast(),
            &mut l,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    if l != size {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "socket option {level}/{name}: the kernel gave {l} bytes where {size} were asked"
            ),
        ));
    }
    Ok(v)
}

/// A non-blocking, close-on-exec socket of `kind` (`SOCK_STREAM`,
/// `SOCK_DGRAM`) in `addr`'s family, bound to `addr` (port 0: any). An IPv6
/// socket is IPv6-only (set before the bind, the one time the kernel takes
/// it): it never stands for an IPv4 address. The error keeps the kernel's
/// errno and names the address and what to do.
pub(crate) fn bound_socket(
    kind: libc::c_int,
    addr: std::net::SocketAddr,
) -> crate::Result<std::os::fd::OwnedFd> {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    let what = if kind == libc::SOCK_STREAM {
        "TCP"
    } else {
        "UDP"
    };
    let domain = if addr.is_ipv4() {
        libc::AF_INET
    } else {
        libc::AF_INET6
    };
    // SAFETY: plain socket(2); owned right away.
    let raw = unsafe { libc::socket(domain, kind | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK, 0) };
    if raw < 0 {
        return Err(crate::Error::io(
            std::io::Error::last_os_error(),
            format!("opening a {what} socket for {addr} (the process may be out of descriptors: raise its open-files limit)"),
        ));
    }
    // SAFETY: raw is fresh and ours.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    if addr.is_ipv6() {
        setsockopt(&fd, libc::IPPROTO_IPV6, libc::IPV6_V6ONLY, 1).map_err(|e| {
            crate::Error::io(e, format!("making the {what} socket for {addr} IPv6-only"))
        })?;
    }
    let (ss, len) = sockaddr(addr);
    // SAFETY: a valid socket and an address of the given length.
    if unsafe { libc::bind(fd.as_raw_fd(), std::ptr::addr_of!(ss).cast(), len) } != 0 {
        let e = std::io::Error::last_os_error();
        let todo = match e.raw_os_error() {
            Some(libc::EADDRNOTAVAIL) => {
                "no interface of this namespace has that address: check the NIC's address (ip addr)"
            }
            Some(libc::EADDRINUSE) => {
                "another socket holds that port: stop what holds it (ss -lnp) or choose another port"
            }
            Some(libc::EACCES) => "a port below 1024 needs root or CAP_NET_BIND_SERVICE",
            _ => "check that this host has the address and the port is free",
        };
        return Err(crate::Error::io(
            e,
            format!("binding a {what} socket to {addr} ({todo})"),
        ));
    }
    Ok(fd)
}

/// A TCP connection to `to` from `from` (any port), made within `timeout`.
/// The socket is bound to `from` before it connects, so the connection
/// leaves by the route of its source address (a per-NIC source rule), as the
/// RDMA traffic it sets up does; `TcpStream::connect` would leave by the
/// route the destination alone picks, often another NIC. A failure carries
/// the kernel's errno; a timeout is an error of kind `Timeout` with none.
#[cfg(feature = "verbs")]
pub(crate) fn tcp_connect_from(
    from: std::net::IpAddr,
    to: std::net::SocketAddr,
    timeout: std::time::Duration,
) -> crate::Result<std::net::TcpStream> {
    use std::os::fd::AsRawFd;
    let fd = bound_socket(libc::SOCK_STREAM, std::net::SocketAddr::new(from, 0))?;
    let failed = |e: std::io::Error| crate::Error::io(e, format!("connecting to {to} from {from}"));
    let (ss, len) = sockaddr(to);
    // SAFETY: a valid socket and an address of the given length.
    if unsafe { libc::connect(fd.as_raw_fd(), std::ptr::addr_of!(ss).cast(), len) } != 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINPROGRESS) {
            return Err(failed(e));
        }
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let mut pfd = libc::pollfd {
                fd: fd.as_raw_fd(),
                events: libc::POLLOUT,
                revents: 0,
            };
            let ms = left.as_millis().min(i32::MAX as u128) as libc::c_int;
            // SAFETY: one valid pollfd.
            let r = unsafe { libc::poll(&mut pfd, 1, ms) };
            if r > 0 {
                break;
            }
            if r == 0 {
                return Err(crate::Error::new(
                    crate::ErrorKind::Timeout,
                    format!("connecting to {to} from {from}: no answer within {timeout:?}"),
                ));
            }
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINTR) {
                return Err(failed(e));
            }
        }
        let err: libc::c_int = getsockopt(&fd, libc::SOL_SOCKET, libc::SO_ERROR).map_err(failed)?;
        if err != 0 {
            return Err(failed(std::io::Error::from_raw_os_error(err)));
        }
    }
    let stream = std::net::TcpStream::from(fd);
    stream.set_nonblocking(false).map_err(failed)?;
    Ok(stream)
}

#[cfg(test)]
mod tests {
    use std::io::Read;
    use std::os::fd::{FromRawFd, OwnedFd};

    /// The descriptor handed over is closed for good, by another process:
    /// the reader of a pipe whose write end went to `close_elsewhere` sees end
    /// of file (it would wait forever on a copy left open anywhere).
    #[test]
    fn close_elsewhere_lets_go_of_every_copy() {
        let mut p = [-1 as libc::c_int; 2];
        // SAFETY: a valid array for pipe2 to fill.
        assert_eq!(unsafe { libc::pipe2(p.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        // SAFETY: fresh descriptors, each owned once.
        let (r, w) = unsafe { (OwnedFd::from_raw_fd(p[0]), OwnedFd::from_raw_fd(p[1])) };
        super::close_elsewhere(w, None);
        let mut pfd = libc::pollfd {
            fd: p[0],
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd. Readable at end of file only: when the
        // last write end is gone (the grandchild waits at most 1 s).
        assert_eq!(unsafe { libc::poll(&mut pfd, 1, 10_000) }, 1, "still open");
        let mut buf = Vec::new();
        assert_eq!(std::fs::File::from(r).read_to_end(&mut buf).unwrap(), 0);
    }

    /// An option is read at its own size (a u64 one, the namespace cookie,
    /// is `apply::identity`'s test), and asking an int option for a u64 is
    /// refused rather than returning four bytes of it and four of zeroes.
    #[test]
    fn getsockopt_reads_an_option_at_its_size_or_refuses() {
        let udp = super::bound_socket(libc::SOCK_DGRAM, "127.0.0.1:0".parse().unwrap()).unwrap();
        let t: libc::c_int = super::getsockopt(&udp, libc::SOL_SOCKET, libc::SO_TYPE).unwrap();
        assert_eq!(t, libc::SOCK_DGRAM);
        let e = super::getsockopt::<u64>(&udp, libc::SOL_SOCKET, libc::SO_TYPE).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidData, "{e}");
        assert!(e.to_string().contains("gave 4 bytes where 8"), "{e}");
    }

    /// A bound socket of the asked type and family, non-blocking and
    /// close-on-exec, an IPv6 one IPv6-only; a bind the kernel refuses keeps
    /// its errno and names the address and what to do.
    #[test]
    fn bound_socket_binds_or_says_which_address_and_what_to_do() {
        use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
        use std::os::fd::AsRawFd;
        let int_opt = |fd: &OwnedFd, level: i32, name: i32| -> i32 {
            super::getsockopt(fd, level, name).unwrap()
        };
        let udp = super::bound_socket(libc::SOCK_DGRAM, "127.0.0.1:0".parse().unwrap()).unwrap();
        assert_eq!(
            int_opt(&udp, libc::SOL_SOCKET, libc::SO_TYPE),
            libc::SOCK_DGRAM
        );
        // SAFETY: plain fcntl(2) queries on a valid descriptor.
        let (fl, fdfl) = unsafe {
            (
                libc::fcntl(udp.as_raw_fd(), libc::F_GETFL),
                libc::fcntl(udp.as_raw_fd(), libc::F_GETFD),
            )
        };
        assert!(fl & libc::O_NONBLOCK != 0 && fdfl & libc::FD_CLOEXEC != 0);
        let port = {
            // SAFETY: plain-old-data, all-zero valid.
            let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
            let mut l = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            // SAFETY: a sockaddr_storage buffer and its length.
            let rc = unsafe {
                libc::getsockname(udp.as_raw_fd(), std::ptr::addr_of_mut!(ss).cast(), &mut l)
            };
            assert_eq!(rc, 0);
            super::from_sockaddr(&ss).unwrap()
        };
        assert_eq!(port.ip(), Ipv4Addr::LOCALHOST);
        assert_ne!(port.port(), 0);
        let e = super::bound_socket(libc::SOCK_DGRAM, port).unwrap_err();
        assert_eq!(e.errno_value(), Some(libc::EADDRINUSE), "{e}");
        assert!(
            e.to_string().contains(&port.to_string()) && e.to_string().contains("ss -lnp"),
            "{e}"
        );
        let far = SocketAddr::new(Ipv4Addr::new(198, 18, 255, 254).into(), 0);
        let e = super::bound_socket(libc::SOCK_STREAM, far).unwrap_err();
        assert_eq!(e.errno_value(), Some(libc::EADDRNOTAVAIL), "{e}");
        assert!(
            e.to_string().contains("TCP socket to 198.18.255.254:0")
                && e.to_string().contains("ip addr"),
            "{e}"
        );
        // IPv6 where the host has it (a test host may run without IPv6).
        match super::bound_socket(
            libc::SOCK_STREAM,
            SocketAddr::new(Ipv6Addr::LOCALHOST.into(), 0),
        ) {
            Ok(tcp6) => {
                assert_eq!(
                    int_opt(&tcp6, libc::SOL_SOCKET, libc::SO_TYPE),
                    libc::SOCK_STREAM
                );
                assert_eq!(int_opt(&tcp6, libc::IPPROTO_IPV6, libc::IPV6_V6ONLY), 1);
            }
            Err(e) => assert!(
                matches!(
                    e.errno_value(),
                    Some(libc::EAFNOSUPPORT | libc::EADDRNOTAVAIL)
                ),
                "{e}"
            ),
        }
    }

    /// The connection leaves from the address it was given, not the one the
    /// route to the peer would pick: the server sees that address as its
    /// peer (on loopback, 127.0.0.1's route would pick 127.0.0.1 itself).
    /// An address this host does not have is the kernel's refusal, not a
    /// connection from somewhere else.
    #[cfg(feature = "verbs")]
    #[test]
    fn tcp_connect_from_leaves_from_the_given_address() {
        use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener};
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let to = l.local_addr().unwrap();
        let from = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 23));
        let c = super::tcp_connect_from(from, to, std::time::Duration::from_secs(5)).unwrap();
        let (_server, peer) = l.accept().unwrap();
        assert_eq!(peer.ip(), from);
        assert_eq!(c.local_addr().unwrap().ip(), from);
        assert_eq!(c.peer_addr().unwrap(), to);
        // A blocking stream, as the channel expects.
        c.set_read_timeout(Some(std::time::Duration::from_millis(10)))
            .unwrap();
        let e = std::io::Read::read(&mut &c, &mut [0u8; 1]).unwrap_err();
        assert!(
            matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ),
            "{e:?}"
        );
        let far = IpAddr::V4(Ipv4Addr::new(198, 18, 255, 254));
        let e = super::tcp_connect_from(far, to, std::time::Duration::from_secs(5)).unwrap_err();
        assert_eq!(e.errno_value(), Some(libc::EADDRNOTAVAIL), "{e:?}");
        assert!(e.to_string().contains("198.18.255.254:0"), "{e}");
        let refused = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 1);
        let e =
            super::tcp_connect_from(from, refused, std::time::Duration::from_secs(5)).unwrap_err();
        assert_eq!(e.errno_value(), Some(libc::ECONNREFUSED), "{e:?}");
    }

    /// Nothing else this process holds stays open in the grandchild once
    /// `close_elsewhere` returns: the write end of another pipe, closed here
    /// right after, is closed everywhere at once (its reader sees end of file
    /// without waiting), as a lock file or a journal must be before the next
    /// command takes the lock or the state directory is remounted read-only.
    ///
    /// Checked in a test process of its own, running nothing else: in the
    /// shared test process any other test that starts a process (or calls
    /// `close_elsewhere`) holds a copy of that write end between its fork and
    /// its exec or exit, and the reader would wait for that copy instead (a
    /// failure seen under load that was no fault of `close_elsewhere`).
    #[test]
    fn close_elsewhere_returns_once_the_grandchild_let_go_of_the_rest() {
        let exe = std::env::current_exe().unwrap();
        let out = std::process::Command::new(exe)
            .args(["--exact", "sys::tests::grandchild_let_go_alone"])
            .args(["--test-threads=1", "--nocapture"])
            .env(ALONE, "1")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            text.contains("1 passed"),
            "the check did not run alone: {text}"
        );
    }

    /// Set for the test process that runs only [`grandchild_let_go_alone`].
    const ALONE: &str = "ROCE_NET_TEST_CLOSE_ELSEWHERE_ALONE";

    /// The body of the test above; it checks only in the process that test
    /// starts for it (with the other tests of this binary running beside it
    /// the check would race with their children, as said above).
    #[test]
    fn grandchild_let_go_alone() {
        if std::env::var_os(ALONE).is_none() {
            return;
        }
        let mappings = || {
            std::fs::read_to_string("/proc/self/maps")
                .unwrap()
                .lines()
                .count()
        };
        let before = mappings();
        for _ in 0..300 {
            let mut other = [-1 as libc::c_int; 2];
            let mut sock = [-1 as libc::c_int; 2];
            // SAFETY: valid arrays for pipe2 to fill.
            unsafe {
                assert_eq!(libc::pipe2(other.as_mut_ptr(), libc::O_CLOEXEC), 0);
                assert_eq!(libc::pipe2(sock.as_mut_ptr(), libc::O_CLOEXEC), 0);
            }
            // SAFETY: fresh descriptors, each owned once.
            let (r, w, handed, keep) = unsafe {
                (
                    OwnedFd::from_raw_fd(other[0]),
                    OwnedFd::from_raw_fd(other[1]),
                    OwnedFd::from_raw_fd(sock[1]),
                    OwnedFd::from_raw_fd(sock[0]),
                )
            };
            super::close_elsewhere(handed, None);
            drop(w);
            let mut pfd = libc::pollfd {
                fd: other[0],
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd; no wait: the write end must be gone.
            let ready = unsafe { libc::poll(&mut pfd, 1, 0) };
            assert_eq!(ready, 1, "another descriptor still open in the grandchild");
            drop((r, keep));
        }
        // Each grandchild unmaps the memory it ran in as it exits (where it
        // shares this process's memory): 300 of them leave no mapping behind
        // once they are gone (each closed its copy above, so each is at most
        // an unmap and an exit away).
        let guard = std::time::Instant::now();
        while mappings() > before + 8 && guard.elapsed() < std::time::Duration::from_secs(30) {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(
            mappings() <= before + 8,
            "{} mappings before, {} after 300 grandchildren",
            before,
            mappings()
        );
    }
}
