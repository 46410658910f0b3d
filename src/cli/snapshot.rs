//! `roce-net snapshot`: the whole host state as JSON, to a file or standard
//! output, plain or gzip-compressed.

use super::context::{host, Context};
use super::exit;
use roce_net::{Error, ErrorKind};
use std::io::IsTerminal;
use std::path::PathBuf;

/// `snapshot [-o FILE] [--pretty] [--compress] [--verbs]`.
pub(super) fn run(
    cli: &Context,
    output: &Option<PathBuf>,
    pretty: bool,
    compress: bool,
    verbs: bool,
) -> Result<u8, Error> {
    if output.is_none() && compress && std::io::stdout().is_terminal() {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            "refusing to write a compressed snapshot to a terminal; \
             use -o FILE.json.gz or redirect standard output",
        ));
    }
    let h = host(cli)?;
    let mut st = h.snapshot()?;
    if verbs {
        st.verbs = Some(h.verbs_view(&roce_net::VerbsOptions::default()));
    }
    match output {
        Some(p) => {
            let mut format = roce_net::SnapshotFormat::for_path(p, pretty);
            format.gzip |= compress;
            st.save(p, format)?;
        }
        None => {
            let format = roce_net::SnapshotFormat {
                pretty,
                gzip: compress,
            };
            match st.write_to(std::io::stdout().lock(), format) {
                // A closed pipe (`| head`) is not an error.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
                r => r.map_err(|e| Error::io(e, "writing snapshot to standard output"))?,
            }
        }
    }
    Ok(exit::OK)
}
