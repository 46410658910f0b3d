//! `roce-net lab`: the global options it refuses, then the demo (`demo.rs`).

use super::context::Context;
use roce_net::Error;

/// `lab [--nics N] [--ipv6] [--keep]`, once [`refused_option`] found nothing to refuse
/// (the dispatch reports a refusal as a usage error, in clap's words).
pub(super) fn run(cli: &Context, nics: usize, ipv6: bool, keep: bool) -> Result<u8, Error> {
    let dirs = super::demo::LabDirs {
        etc_root: cli.etc_root.as_deref(),
        state_dir: cli.state_dir_given.then_some(cli.state_dir.as_path()),
    };
    super::demo::run(nics, ipv6, keep, cli.json, &dirs)
}

/// Why a global option given cannot apply to the lab. The lab builds its own
/// namespaces, and its NICs are veths with no RDMA devices: a --netns or
/// --sysfs-root would be ignored, and the user would think the lab ran (or
/// left its host) there.
pub(super) fn refused_option(cli: &Context) -> Option<&'static str> {
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
