//! `roce-net gids`: the GID tables as mlnx-tools' `show_gids` prints them.

use super::context::{state, Context};
use super::exit;
use super::output::{out, print_json};
use roce_net::Error;
use std::path::PathBuf;

/// `gids [DEV [PORT]] [--from FILE]`.
pub(super) fn run(
    cli: &Context,
    device: &Option<String>,
    port: Option<u32>,
    from: &Option<PathBuf>,
) -> Result<u8, Error> {
    let st = state(cli, from)?;
    let filter = roce_net::GidFilter {
        device: device.clone(),
        port,
    };
    let rows = roce_net::show_gids(&st, &filter)?;
    if cli.json {
        print_json(&rows)?;
    } else {
        out(&roce_net::render_show_gids(&rows));
    }
    Ok(exit::OK)
}
