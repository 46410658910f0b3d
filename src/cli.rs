//! Argument parsing and dispatch.

use crate::render;
use clap::{Parser, Subcommand};
use roce_net::{Error, ErrorKind, Host, HostState};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Exit codes (documented in docs/cli.md).
pub mod exit {
    /// Success; `doctor`: no findings above info.
    pub const OK: u8 = 0;
    /// `doctor`: warnings found.
    pub const WARNINGS: u8 = 1;
    /// `doctor`: errors found.
    pub const ERRORS: u8 = 2;
    /// Bad command line.
    pub const USAGE: u8 = 64;
    /// Bad input data (snapshot, policy, address).
    pub const DATA: u8 = 65;
    /// A named object does not exist (namespace, file, interface).
    pub const NOT_FOUND: u8 = 66;
    /// Not permitted: run as root.
    pub const PERMISSION: u8 = 77;
    /// Another apply holds the lock.
    pub const LOCKED: u8 = 75;
    /// The host drifted since the plan was made.
    pub const DRIFT: u8 = 73;
    /// Apply failed and was rolled back; nothing changed.
    pub const ROLLED_BACK: u8 = 3;
    /// Rollback failed: the host may be in a mixed state.
    pub const ROLLBACK_FAILED: u8 = 4;
    /// Anything else (kernel refused, I/O).
    pub const FAILURE: u8 = 70;
    /// The user declined at the prompt.
    pub const DECLINED: u8 = 5;
}

#[derive(Parser, Debug)]
#[command(
    name = "roce-net",
    version,
    about = "Diagnose and fix host networking on multi-NIC RoCE/RDMA servers",
    long_about = None
)]
struct Cli {
    /// Work inside this named network namespace (as `ip -n NAME`).
    #[arg(long, global = true, value_name = "NAME")]
    netns: Option<String>,
    /// Read RDMA devices from DIR/class/infiniband instead of /sys.
    #[arg(long, global = true, value_name = "DIR")]
    sysfs_root: Option<PathBuf>,
    /// Machine-readable JSON output.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// NICs (in the spirit of ibdev2netdev), GIDs, rules, non-main tables, neighbours.
    Show {
        /// Show a saved snapshot instead of the live host.
        #[arg(long, value_name = "FILE")]
        from: Option<PathBuf>,
    },
    /// GID tables with show_gids-compatible columns.
    Gids {
        /// Show a saved snapshot instead of the live host.
        #[arg(long, value_name = "FILE")]
        from: Option<PathBuf>,
    },
    /// Capture the whole host state as JSON.
    Snapshot {
        /// Write to FILE instead of standard output.
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
}

/// Entry point.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let json = cli.json;
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            report_error(&e, json);
            ExitCode::from(exit_code(&e))
        }
    }
}

/// The exit code for an error kind.
pub fn exit_code(e: &Error) -> u8 {
    match e.kind() {
        ErrorKind::Permission => exit::PERMISSION,
        ErrorKind::NotFound => exit::NOT_FOUND,
        ErrorKind::InvalidInput | ErrorKind::Policy | ErrorKind::Parse => exit::DATA,
        ErrorKind::Locked => exit::LOCKED,
        ErrorKind::Drift => exit::DRIFT,
        ErrorKind::RolledBack | ErrorKind::Verify => exit::ROLLED_BACK,
        ErrorKind::RollbackFailed => exit::ROLLBACK_FAILED,
        _ => exit::FAILURE,
    }
}

fn report_error(e: &Error, json: bool) {
    if json {
        let v = serde_json::json!({
            "error": {
                "kind": e.kind().name(),
                "message": e.to_string(),
                "errno": e.errno_value(),
                "extack": e.extack(),
            }
        });
        eprintln!("{v}");
    } else {
        eprintln!("roce-net: error: {e}");
    }
}

fn host(cli: &Cli) -> Result<Host, Error> {
    let mut h = match &cli.netns {
        Some(n) => Host::netns(n)?,
        None => Host::current(),
    };
    if let Some(r) = &cli.sysfs_root {
        h = h.with_sysfs_root(r.clone());
    }
    Ok(h)
}

fn state(cli: &Cli, from: &Option<PathBuf>) -> Result<HostState, Error> {
    match from {
        Some(p) => HostState::load(p),
        None => host(cli)?.snapshot(),
    }
}

/// Print to stdout; a closed pipe (`| head`) is not an error.
pub fn out(s: &str) {
    let mut o = std::io::stdout().lock();
    let _ = o.write_all(s.as_bytes());
    if !s.ends_with('\n') {
        let _ = o.write_all(b"\n");
    }
}

fn print_json<T: serde::Serialize>(v: &T) -> Result<(), Error> {
    let s = serde_json::to_string_pretty(v)
        .map_err(|e| Error::new(ErrorKind::Io, format!("serialising output: {e}")))?;
    out(&s);
    Ok(())
}

fn run(cli: Cli) -> Result<u8, Error> {
    match &cli.cmd {
        Cmd::Show { from } => {
            let st = state(&cli, from)?;
            if cli.json {
                print_json(&st)?;
            } else {
                out(&render::show(&st));
            }
        }
        Cmd::Gids { from } => {
            let st = state(&cli, from)?;
            if cli.json {
                print_json(&render::gid_rows(&st))?;
            } else {
                out(&render::gids(&st));
            }
        }
        Cmd::Snapshot { output } => {
            let st = host(&cli)?.snapshot()?;
            let text = st.to_json();
            match output {
                Some(p) => std::fs::write(p, text + "\n")
                    .map_err(|e| Error::io(e, format!("writing snapshot to {}", p.display())))?,
                None => out(&text),
            }
        }
    }
    Ok(exit::OK)
}
