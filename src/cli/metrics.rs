//! `roce-net metrics`: the Prometheus text format for node_exporter's textfile
//! collector, to standard output or written atomically to a file.

use super::context::{state, Context};
use super::exit;
use super::output::{out, usage_error};
use roce_net::{Error, ErrorKind};
use std::io::Write;
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
        Some(p) => write_atomic(p, text.as_bytes())?,
        None => out(&text),
    }
    Ok(exit::OK)
}

/// Write `data` to `path` so a reader sees the old file or the whole new one,
/// never a part: a temporary file in the same directory (named so node_exporter's
/// textfile collector, which reads only `*.prom`, skips it), then rename(2) over
/// `path`. The temporary file is removed when anything fails.
fn write_atomic(path: &std::path::Path, data: &[u8]) -> Result<(), Error> {
    let name = path.file_name().ok_or_else(|| {
        Error::new(
            ErrorKind::InvalidInput,
            format!(
                "{}: give a file name to write the metrics to",
                path.display()
            ),
        )
    })?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(data)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::io(
            e,
            format!("writing {} (via {})", path.display(), tmp.display()),
        )
    })
}
