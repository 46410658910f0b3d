//! `roce-net fleet`: findings that only show across hosts, from their saved
//! snapshots, and a summary per host.

use super::context::Context;
use super::exit;
use super::output::{out, print_json};
use crate::render;
use roce_net::Error;
use std::path::PathBuf;

/// `fleet SNAPSHOT...`: the exit code is the worst of the cross-host findings
/// and of every host's own.
pub(super) fn run(cli: &Context, snapshots: &[PathBuf]) -> Result<u8, Error> {
    // Each snapshot is summarised as it is loaded, one per core at a time.
    let mut fleet = roce_net::FleetBuilder::new(&roce_net::DoctorOptions::default());
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    fleet.add_files(snapshots, threads)?;
    let report = fleet.finish();
    if cli.json {
        print_json(&report)?;
    } else {
        out(&render::fleet(&report));
    }
    // The worst of the cross-host findings and of every host's own: a
    // fleet whose table shows a host with errors does not exit 0.
    let worst = roce_net::max_severity(&report.findings)
        .max(report.hosts.iter().filter_map(|h| h.max_severity).max());
    Ok(exit::for_severity(worst))
}
