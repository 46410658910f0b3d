//! `roce-net fleet`: findings that only show across hosts, from their saved
//! snapshots, and a summary per host; with `--mesh`, the cluster mesh's
//! faults (docs/mesh.md) beside them.

use super::context::Context;
use super::exit;
use super::output::{out, print_json};
use crate::render;
use roce_net::Error;
use std::path::PathBuf;

/// `fleet SNAPSHOT... [--mesh-plan PLAN --mesh RESULT...]`: the exit code is
/// the worst of the cross-host findings and of every host's own, and with a
/// mesh, of its verdict.
pub(super) fn run(
    cli: &Context,
    snapshots: &[PathBuf],
    mesh_plan: Option<&std::path::Path>,
    mesh: &[PathBuf],
) -> Result<u8, Error> {
    // Each snapshot is summarised as it is loaded, one per core at a time.
    let mut fleet = roce_net::FleetBuilder::new(&roce_net::DoctorOptions::default());
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    fleet.add_files(snapshots, threads)?;
    let report = fleet.finish();
    let mesh_report = match mesh_plan {
        Some(p) => Some(super::mesh::report(p, mesh)?.0),
        None => None,
    };
    if cli.json {
        match &mesh_report {
            // The fleet report, with the mesh's faults and its whole report.
            Some(m) => {
                let mut v = serde_json::to_value(&report).map_err(|e| {
                    Error::new(roce_net::ErrorKind::Io, format!("serializing: {e}"))
                })?;
                if let Some(o) = v.as_object_mut() {
                    o.insert(
                        "faults".into(),
                        serde_json::to_value(&m.faults).unwrap_or_default(),
                    );
                    o.insert("mesh".into(), serde_json::to_value(m).unwrap_or_default());
                }
                print_json(&v)?;
            }
            None => print_json(&report)?,
        }
    } else {
        out(&render::fleet(&report));
        if let Some(m) = &mesh_report {
            out(&format!("\n{}\n", m.table().join("\n")));
        }
    }
    // The worst of the cross-host findings and of every host's own: a
    // fleet whose table shows a host with errors does not exit 0.
    let worst = roce_net::max_severity(&report.findings)
        .max(report.hosts.iter().filter_map(|h| h.max_severity).max());
    let code = exit::for_severity(worst);
    Ok(match &mesh_report {
        Some(m) if !m.passed => code.max(exit::for_probe(false)),
        _ => code,
    })
}
