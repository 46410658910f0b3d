//! `roce-net ibdev2netdev`: RDMA ports and their netdevs as OFED's
//! `ibdev2netdev` prints them.

use super::context::{state, Context};
use super::exit;
use super::output::{out, print_json};
use roce_net::Error;
use std::path::PathBuf;

/// `ibdev2netdev [-v] [--from FILE]`.
pub(super) fn run(cli: &Context, verbose: bool, from: &Option<PathBuf>) -> Result<u8, Error> {
    let st = state(cli, from)?;
    let rows = roce_net::ibdev2netdev(&st);
    if cli.json {
        print_json(&rows)?;
    } else {
        let text = roce_net::render_ibdev2netdev(&rows, verbose);
        if !text.is_empty() {
            out(&text);
        }
    }
    Ok(exit::OK)
}
