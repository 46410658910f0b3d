//! `roce-net`: the command-line tool. Every verb is a library call plus rendering;
//! the library itself prints nothing.
//!
//! The process starts at a C `main` of its own instead of Rust's `fn main`
//! (`#![no_main]`): Rust's start-up asks glibc for the main thread's stack
//! bounds to place a guard for its stack-overflow message, and glibc finds them
//! by reading and parsing `/proc/self/maps` (`pthread_getattr_np`): about
//! 0.15 ms of a 5 ms `apply` (docs/benchmarks.md). Everything else that start-up
//! does and the tool relies on is done here: closed standard descriptors are
//! reopened on `/dev/null` (so no file the tool opens can become its stdout),
//! `SIGPIPE` is ignored (a closed pipe is an `EPIPE` error to report, not a
//! kill), a panic is caught and exits with 101, and stdout is flushed before
//! the process exits. What is lost: a stack overflow is a plain `SIGSEGV`
//! without Rust's "has overflowed its stack" line (input nesting is bounded,
//! see docs/reliability.md), and a panic names the thread `<unnamed>`.

#![cfg_attr(not(test), no_main)]

mod cli;
mod lab_signals;
mod logger;
mod render;

/// The process entry (see the module documentation). `argc`/`argv` are unused:
/// `std::env::args` reads them itself on glibc.
#[cfg(not(test))]
#[no_mangle]
pub extern "C" fn main(_argc: libc::c_int, _argv: *const *const libc::c_char) -> libc::c_int {
    use std::io::Write;
    reopen_closed_standard_fds();
    // SAFETY: setting a signal's disposition to SIG_IGN, before any thread starts.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    logger::init_from_env();
    let code = std::panic::catch_unwind(cli::main).unwrap_or(101);
    let _ = std::io::stdout().flush();
    libc::c_int::from(code)
}

/// Test builds start at the test harness's entry; this keeps the CLI reachable
/// from a `main` there, as an ordinary binary's would be.
#[cfg(test)]
fn main() {
    logger::init_from_env();
    let _ = cli::main();
}

/// Open `/dev/null` on each of descriptors 0, 1 and 2 that is closed (as Rust's
/// own start-up does); if that fails the process aborts, as Rust's does.
fn reopen_closed_standard_fds() {
    let mut fds = [0, 1, 2].map(|fd| libc::pollfd {
        fd,
        events: 0,
        revents: 0,
    });
    // SAFETY: polling three pollfd structs we own, without waiting.
    let r = unsafe { libc::poll(fds.as_mut_ptr(), 3, 0) };
    let closed: Vec<libc::c_int> = if r < 0 {
        // No poll: look at each descriptor instead.
        // SAFETY: F_GETFD only queries the descriptor.
        (0..3)
            .filter(|&fd| unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1)
            .collect()
    } else {
        fds.iter()
            .filter(|p| p.revents & libc::POLLNVAL != 0)
            .map(|p| p.fd)
            .collect()
    };
    for fd in closed {
        // SAFETY: opening a constant NUL-terminated path; the lowest free
        // descriptor is the closed one (lower ones are open or opened here).
        let got = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) };
        if got != fd {
            // SAFETY: ending the process at once, as Rust's start-up does.
            unsafe { libc::abort() };
        }
    }
}

#[cfg(test)]
mod tests {
    /// In a child with stdin and stderr closed, the entry's fd check reopens
    /// exactly those two on `/dev/null`, so a file opened next is not one of them.
    #[test]
    fn closed_standard_descriptors_are_reopened_on_dev_null() {
        // SAFETY: the child only makes async-signal-safe calls, then _exits.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            // SAFETY: closing and re-checking descriptors in the child.
            unsafe {
                libc::close(0);
                libc::close(2);
                super::reopen_closed_standard_fds();
                let ok = libc::fcntl(0, libc::F_GETFD) != -1
                    && libc::fcntl(2, libc::F_GETFD) != -1
                    && libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY) > 2;
                libc::_exit(if ok { 0 } else { 1 });
            }
        }
        let mut status = 0;
        // SAFETY: waiting for our own child.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "{status}"
        );
    }
}
