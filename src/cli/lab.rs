//! `roce-net lab`: the global options it refuses, then the demo (`demo.rs`).

use super::{exit, usage_error, Cli};
use clap::CommandFactory;
use roce_net::Error;

/// `lab [--nics N] [--keep]`.
pub(super) fn run(cli: &Cli, nics: usize, keep: bool) -> Result<u8, Error> {
    if let Some(why) = refused_option(cli) {
        if cli.json {
            usage_error(why, true);
        } else {
            let _ = Cli::command()
                .error(clap::error::ErrorKind::ArgumentConflict, why)
                .print();
        }
        return Ok(exit::USAGE);
    }
    let dirs = super::demo::LabDirs {
        etc_root: cli.etc_root.as_deref(),
        state_dir: cli.state_dir_given.then_some(cli.state_dir.as_path()),
    };
    super::demo::run(nics, keep, cli.json, &dirs)
}

/// Why a global option given cannot apply to the lab. The lab builds its own
/// namespaces, and its NICs are veths with no RDMA devices: a --netns or
/// --sysfs-root would be ignored, and the user would think the lab ran (or
/// left its host) there.
fn refused_option(cli: &Cli) -> Option<&'static str> {
    if cli.netns.is_some() {
        Some(
            "`lab` builds its own namespaces (rnt-demo-*) and does not take --netns; \
             drop it (with --keep the lab prints the namespace to use)",
        )
    } else if cli.sysfs_root.is_some() {
        Some(
            "`lab` does not take --sysfs-root: its NICs are veths, which no RDMA \
             device of a sysfs tree backs; drop it (use --sysfs-root with `doctor` or \
             `snapshot` to read such a tree)",
        )
    } else {
        None
    }
}
