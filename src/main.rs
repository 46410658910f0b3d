//! `roce-net`: the command-line tool. Every verb is a library call plus rendering;
//! the library itself prints nothing.

mod apply_cmd;
mod cli;
mod demo;
mod render;

use std::process::ExitCode;

fn main() -> ExitCode {
    // A short-lived process whose few threads (one inside the target namespace)
    // each allocate a little: one malloc arena for all of them saves creating
    // and growing an arena per thread (mmap + mprotect), measurable in `apply`.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
    cli::main()
}
