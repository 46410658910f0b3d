//! `roce-net show`: NICs, GIDs, rules, non-main tables and neighbours, of the
//! host or a saved snapshot.

use super::context::{state, Context};
use super::exit;
use super::output::{out, print_json};
use crate::render;
use roce_net::Error;
use std::path::PathBuf;

/// `show [--from FILE]`.
pub(super) fn run(cli: &Context, from: &Option<PathBuf>) -> Result<u8, Error> {
    let st = state(cli, from)?;
    if cli.json {
        print_json(&st)?;
    } else {
        let source = match (from, &cli.sysfs_root) {
            (Some(f), _) => format!("the snapshot {}", f.display()),
            (None, Some(r)) => format!("{}/class/infiniband", r.display()),
            (None, None) => "/sys/class/infiniband".to_string(),
        };
        out(&render::show(&st, &source));
    }
    Ok(exit::OK)
}
