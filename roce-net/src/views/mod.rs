//! Text views that other tools print and people script against, reproduced from
//! a snapshot: `show_gids` (mlnx-tools) and OFED's `ibdev2netdev`.
//!
//! Each view is data first (rows that serialise to JSON) and a renderer that
//! prints exactly what the tool prints, so `cut -f`, `awk` and `tail -n +3`
//! pipelines keep working. Where the tool is wrong, the view is right and the
//! difference is documented (`docs/rdma-sysfs.md`).

mod gids;
mod ibdev2netdev;

pub use gids::{render_show_gids, show_gids, GidFilter, GidRow};
pub use ibdev2netdev::{ibdev2netdev, render_ibdev2netdev, Ibdev2NetdevRow};
