//! `roce-net mesh`: the cluster test (docs/mesh.md). `node` writes this
//! host's inventory entry, `plan` the schedule from every node's entry or
//! snapshot, `run` this node's part of a plan (its responder on every NIC and
//! its probes), `report` the merge of every node's result: the verdict and
//! the broken hosts, rails, NICs and pairs.

use super::context::{host, Context};
use super::exit;
use super::output::{out, print_json};
use crate::render;
use clap::{Args, Subcommand, ValueEnum};
use roce_net::{Error, ErrorKind, MeshInventory, MeshMerger, MeshOptions, MeshPlan, RailBy};
use std::path::{Path, PathBuf};

/// `mesh SUBCOMMAND`.
#[derive(Subcommand, Debug)]
#[command(defer = true)]
pub(crate) enum MeshCmd {
    /// This host's entry of a mesh inventory: its NICs in scope with their
    /// address, MAC, MTU and rail (gather one per node, then `mesh plan`).
    Node {
        /// Write to FILE instead of standard output.
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// How NICs are grouped into rails.
        #[arg(long, value_enum, default_value_t = RailByArg::Auto)]
        rail_by: RailByArg,
        /// Probe each NIC on its address of this family (default: IPv4, or
        /// IPv6 for a NIC without IPv4).
        #[arg(long, value_enum)]
        family: Option<FamilyArg>,
        /// NICs the entry must list besides those in scope, with or without
        /// an address (the node's rails; comma-separated or repeated): one
        /// without an address is named by the report (`no-address`,
        /// `link-down`, `absent`). Without it, a host without RDMA devices
        /// adds the links that look like its NICs in scope, have no address
        /// and are administratively up; with it, nothing is guessed.
        #[arg(long = "nic", value_name = "NIC", value_delimiter = ',')]
        nics: Vec<String>,
    },
    /// The schedule: which NIC probes which in which round, from every node's
    /// entry (`mesh node -o`), snapshot (`snapshot -o`) or an inventory.
    Plan(Box<PlanArgs>),
    /// Run this node's part of a plan: the responder on every NIC, and its
    /// probes in the plan's time slots; `--check` prints what it would probe.
    Run {
        /// The plan (`mesh plan -o FILE`), or this node's part of one.
        #[arg(long, value_name = "FILE")]
        plan: PathBuf,
        /// This node's name in the plan (default: its host name, or
        /// `hostname:netns` with `--netns`).
        #[arg(long, value_name = "NAME")]
        host: Option<String>,
        /// Write the node's result to FILE (for `mesh report`).
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// Say what would be probed and answered; send nothing.
        #[arg(long)]
        check: bool,
        /// RDMA level: libibverbs to load (soname or path) instead of
        /// libibverbs.so.1, as `probe rdma --libibverbs`.
        #[arg(long, value_name = "PATH")]
        libibverbs: Option<PathBuf>,
    },
    /// Merge every node's result: the verdict, and each broken host, rail,
    /// NIC or pair once, with the cause, the evidence and the fix.
    Report {
        /// The plan the nodes ran.
        #[arg(long, value_name = "FILE")]
        plan: PathBuf,
        /// The nodes' results (`mesh run -o FILE`), or directories of them
        /// (every `*.json` in each).
        #[arg(required = true, value_name = "RESULT")]
        results: Vec<PathBuf>,
        /// Also write the merged report (JSON) to FILE.
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
}

/// `--rail-by`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum RailByArg {
    /// The subnet, plus the position when a host has several NICs in it.
    Auto,
    /// The subnet alone.
    Subnet,
    /// The NIC's position on its host.
    Index,
}

impl From<RailByArg> for RailBy {
    fn from(r: RailByArg) -> RailBy {
        match r {
            RailByArg::Auto => RailBy::Auto,
            RailByArg::Subnet => RailBy::Subnet,
            RailByArg::Index => RailBy::Index,
        }
    }
}

/// `--family`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum FamilyArg {
    /// IPv4.
    Ipv4,
    /// IPv6.
    Ipv6,
}

impl From<FamilyArg> for roce_net::Family {
    fn from(f: FamilyArg) -> roce_net::Family {
        match f {
            FamilyArg::Ipv4 => roce_net::Family::Inet,
            FamilyArg::Ipv6 => roce_net::Family::Inet6,
        }
    }
}

/// `mesh plan`.
#[derive(Args, Debug)]
pub(crate) struct PlanArgs {
    /// Every node's entry (`mesh node -o`), snapshot (`snapshot -o`, `.gz`
    /// too) or an inventory (`{"nodes": [...]}`); directories: every `*.json`
    /// and `*.json.gz` in them.
    #[arg(required = true, value_name = "NODE")]
    nodes: Vec<PathBuf>,
    /// Write the plan to FILE (what `mesh run --plan` reads).
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Peers each NIC probes per round (1 to 16).
    #[arg(long, default_value_t = 2)]
    peers: u32,
    /// Rounds (1 to 64).
    #[arg(long, default_value_t = 3)]
    rounds: u32,
    /// Probe every pair of each rail (small clusters; rounds grow with the rail).
    #[arg(long)]
    all_pairs: bool,
    /// Do not probe the NICs of a host among themselves.
    #[arg(long)]
    no_intra_host: bool,
    /// Another rotation probes other pairs (the same one, the same pairs).
    #[arg(long, default_value_t = 0)]
    rotation: u32,
    /// The levels to probe, comma-separated: neighbor, ip, rdma.
    #[arg(long, value_delimiter = ',', default_value = "neighbor,ip,rdma")]
    levels: Vec<LevelArg>,
    /// How NICs are grouped into rails (for snapshots).
    #[arg(long, value_enum, default_value_t = RailByArg::Auto)]
    rail_by: RailByArg,
    /// For snapshots: probe each NIC on its address of this family (default:
    /// IPv4, or IPv6 for a NIC without IPv4).
    #[arg(long, value_enum)]
    family: Option<FamilyArg>,
    /// UDP port of the IP echo; the RDMA exchanges use the ports above it.
    #[arg(long, default_value_t = roce_net::MESH_DEFAULT_PORT)]
    port: u16,
    /// Round 1 starts this many seconds from now (every node probes in the
    /// same slots: give the time it takes to start the run on every node).
    #[arg(long, default_value_t = 15.0, value_name = "SECONDS")]
    start_in: f64,
    /// Neighbour level: how long each probe listens, ms.
    #[arg(long, default_value_t = 1000)]
    neighbor_ms: u64,
    /// IP level: each echo's bound, ms.
    #[arg(long, default_value_t = 1000)]
    ip_ms: u64,
    /// RDMA level: each probe's bound, ms.
    #[arg(long, default_value_t = 10_000)]
    rdma_ms: u64,
    /// RDMA level: bytes per RDMA write.
    #[arg(long, default_value_t = 65536)]
    rdma_size: u32,
    /// RDMA level: RDMA writes each way.
    #[arg(long, default_value_t = 4)]
    rdma_iterations: u32,
    /// RDMA level: send/recv round trips.
    #[arg(long, default_value_t = 16)]
    rdma_latency_iterations: u32,
}

/// A level of `--levels`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum LevelArg {
    /// ARP / neighbour discovery.
    Neighbor,
    /// The IP echo.
    Ip,
    /// RDMA.
    Rdma,
}

/// Files named, directories expanded to their `*.json` (and `*.json.gz`),
/// sorted.
fn expand(paths: &[PathBuf]) -> Result<Vec<PathBuf>, Error> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let rd = std::fs::read_dir(p)
                .map_err(|e| Error::io(e, format!("listing directory {}", p.display())))?;
            let mut found: Vec<PathBuf> = Vec::new();
            for e in rd.take(1_000_000) {
                let e =
                    e.map_err(|e| Error::io(e, format!("listing directory {}", p.display())))?;
                let path = e.path();
                let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
                if name.ends_with(".json") || name.ends_with(".json.gz") {
                    found.push(path);
                }
            }
            found.sort();
            out.extend(found);
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

/// Write `text` to `path` through a temporary file and a rename, so a reader
/// never sees half a document.
fn write_atomic(path: &Path, text: &str, what: &str) -> Result<(), Error> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map_or_else(|| "mesh".into(), |n| n.to_string_lossy().into_owned());
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            Error::io(e, format!("writing the {what} to {}", path.display()))
        })
}

fn json(v: &impl serde::Serialize) -> Result<String, Error> {
    serde_json::to_string_pretty(v)
        .map(|s| s + "\n")
        .map_err(|e| Error::new(ErrorKind::Io, format!("serializing: {e}")))
}

/// `mesh ...`.
pub(super) fn run(cli: &Context, cmd: &MeshCmd) -> Result<u8, Error> {
    match cmd {
        MeshCmd::Node {
            output,
            rail_by,
            family,
            nics,
        } => {
            let st = host(cli)?.snapshot()?;
            let node =
                roce_net::mesh_node_with(&st, (*rail_by).into(), family.map(Into::into), nics);
            match output {
                Some(p) => write_atomic(p, &json(&node)?, "mesh node")?,
                None if cli.json => print_json(&node)?,
                None => out(&render::mesh_node(&node)),
            }
            Ok(exit::OK)
        }
        MeshCmd::Plan(a) => plan(cli, a),
        MeshCmd::Run {
            plan,
            host: name,
            output,
            check,
            libibverbs,
        } => run_node(cli, plan, name, output, *check, libibverbs),
        MeshCmd::Report {
            plan,
            results,
            output,
        } => {
            let (report, _) = report(plan, results)?;
            if let Some(p) = output {
                write_atomic(p, &json(&report)?, "mesh report")?;
            }
            if cli.json {
                print_json(&report)?;
            } else {
                out(&(report.table().join("\n") + "\n"));
            }
            Ok(exit::for_probe(report.passed))
        }
    }
}

/// The merged report of `results` (files or directories) against `plan`.
pub(super) fn report(
    plan: &Path,
    results: &[PathBuf],
) -> Result<(roce_net::MeshReport, MeshPlan), Error> {
    let plan = MeshPlan::load(plan)?;
    let mut m = MeshMerger::new(&plan);
    for f in expand(results)? {
        m.add_file(&f)?;
    }
    Ok((m.finish(), plan))
}

fn plan(cli: &Context, a: &PlanArgs) -> Result<u8, Error> {
    let mut o = MeshOptions::default();
    o.start_in(a.start_in)
        .map_err(|e| Error::new(e.kind(), format!("--start-in: {}", e.message())))?;
    let files = expand(&a.nodes)?;
    let inv = MeshInventory::load_files(&files, a.rail_by.into(), a.family.map(Into::into))?;
    o.peers = a.peers;
    o.rounds = a.rounds;
    o.all_pairs = a.all_pairs;
    o.intra_host = !a.no_intra_host;
    o.rotation = a.rotation;
    o.levels.neighbor = a.levels.contains(&LevelArg::Neighbor);
    o.levels.ip = a.levels.contains(&LevelArg::Ip);
    o.levels.rdma = a.levels.contains(&LevelArg::Rdma);
    o.port = a.port;
    o.neighbor_ms = a.neighbor_ms;
    o.ip_ms = a.ip_ms;
    o.rdma_ms = a.rdma_ms;
    o.rdma_workload.write_size = a.rdma_size;
    o.rdma_workload.write_iterations = a.rdma_iterations;
    o.rdma_workload.latency_iterations = a.rdma_latency_iterations;
    let p = roce_net::mesh_plan(&inv, &o)?;
    if let Some(f) = &a.output {
        write_atomic(f, &json(&p)?, "mesh plan")?;
    }
    if cli.json {
        print_json(&p)?;
    } else {
        out(&render::mesh_plan(&p, a.output.as_deref()));
    }
    Ok(exit::OK)
}

fn run_node(
    cli: &Context,
    plan: &Path,
    name: &Option<String>,
    output: &Option<PathBuf>,
    check: bool,
    libibverbs: &Option<PathBuf>,
) -> Result<u8, Error> {
    let file = roce_net::MeshPlanFile::load(plan)?;
    let h = host(cli)?;
    let node = match name {
        Some(n) => n.clone(),
        None => roce_net::fleet_host_label(&h.snapshot()?),
    };
    let part = file.for_node(&node)?;
    if check {
        if cli.json {
            print_json(&part.schedule)?;
        } else {
            out(&render::mesh_schedule(&part.schedule));
        }
        return Ok(exit::OK);
    }
    let mut opts = roce_net::MeshRunOptions::default();
    opts.host = Some(node);
    opts.verbs = super::rdma::verbs_opts(libibverbs);
    // Interrupted (SIGINT, SIGTERM), the process ends at once, and its
    // responder with it: nothing of the run outlives it.
    let r = h.mesh_run(&part, &opts)?;
    if let Some(p) = output {
        write_atomic(p, &json(&r)?, "mesh result")?;
    }
    if cli.json {
        print_json(&r)?;
    } else {
        out(&render::mesh_result(&r));
    }
    // The run worked: the verdict is the merged report's, not one node's.
    Ok(exit::OK)
}
