//! `roce-net`: the command-line tool. Every verb is a library call plus rendering;
//! the library itself prints nothing.

mod apply_cmd;
mod cli;
mod demo;
mod rdma;
mod render;

use std::process::ExitCode;

fn main() -> ExitCode {
    cli::main()
}
