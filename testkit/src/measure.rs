//! A child process run to completion and measured the way the benchmarks
//! compare roce-net with iproute2: wall time, peak resident memory (`wait4`'s
//! `ru_maxrss`, so only the child is counted) and what it printed.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What [`run_measured`] saw.
#[derive(Debug)]
pub struct Measured {
    /// The command, as `{:?}` prints it (for messages).
    pub command: String,
    /// Wall time from spawn to reaping.
    pub took: Duration,
    /// The child's peak resident set, KiB.
    pub maxrss_kib: u64,
    /// Its standard output (standard error is inherited).
    pub stdout: Vec<u8>,
    /// Its exit code; `None` when a signal ended it.
    pub exit_code: Option<i32>,
}

impl Measured {
    /// `self`, after asserting that the command exited 0.
    pub fn succeeded(self) -> Measured {
        assert_eq!(self.exit_code, Some(0), "{} failed", self.command);
        self
    }
}

/// Run `cmd` to completion with its standard output captured.
pub fn run_measured(cmd: &mut Command) -> Measured {
    let command = format!("{cmd:?}");
    let start = Instant::now();
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("spawning {command}: {e}"));
    let mut stdout = Vec::new();
    if let Some(mut so) = child.stdout.take() {
        std::io::Read::read_to_end(&mut so, &mut stdout)
            .unwrap_or_else(|e| panic!("reading the output of {command}: {e}"));
    }
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: wait4 on our own child with valid out-pointers.
    let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
    let took = start.elapsed();
    assert!(rc == pid, "wait4 on {command}");
    std::mem::forget(child); // already reaped by wait4
    Measured {
        command,
        took,
        maxrss_kib: ru.ru_maxrss as u64,
        stdout,
        exit_code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
    }
}
