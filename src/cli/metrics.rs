//! `roce-net metrics`: the Prometheus text format for node_exporter's textfile
//! collector, to standard output or written atomically to a file.

use super::context::{state, Context};
use super::exit;
use super::output::{out, usage_error};
use roce_net::Error;
use std::path::PathBuf;

/// `metrics [--from FILE] [-o FILE]`; `--json` is a usage error (exit 64).
pub(super) fn run(
    cli: &Context,
    from: &Option<PathBuf>,
    output: &Option<PathBuf>,
) -> Result<u8, Error> {
    if cli.json {
        // Its one format is the Prometheus text format; a JSON
        // reader given it would fail on the first line.
        usage_error(
            "metrics has no --json: it writes the Prometheus text format \
             (the findings as JSON: `roce-net --json doctor`)",
            true,
        );
        return Ok(exit::USAGE);
    }
    let st = state(cli, from)?;
    let text = roce_net::render_metrics(&st, &roce_net::doctor(&st));
    match output {
        // A random temporary name in the same directory, then a rename: the
        // collector reads only `*.prom`, and never sees half a file.
        Some(p) => roce_net::write_file_atomically(p, text.as_bytes())?,
        None => out(&text),
    }
    Ok(exit::OK)
}
