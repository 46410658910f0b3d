//! `roce-net route-get`: the kernel's answer to which route a flow takes,
//! printed as `ip route get` prints it.

use super::context::{host, Context};
use super::exit;
use super::output::{out, print_json};
use roce_net::{Error, RouteQuery};

/// `route-get DST [--from SRC] [--iif DEV] ... [-d]`: `query` is the flow as
/// the command line gave it; `details` prints as `ip -d route get`.
pub(super) fn run(cli: &Context, query: &RouteQuery, details: bool) -> Result<u8, Error> {
    let r = host(cli)?.route_query(query)?;
    if cli.json {
        print_json(&r)?;
    } else {
        out(&r.render(details));
    }
    Ok(exit::OK)
}
