//! Prometheus text exposition format (version 0.0.4, the format node_exporter's
//! textfile collector reads) rendered from a snapshot and its doctor findings.
//!
//! Pure: [`render_metrics`] returns the text; the CLI (`roce-net metrics -o FILE`) writes
//! it atomically. Every family has `# HELP` and `# TYPE` lines, names start with
//! `roce_net_`, counters end in `_total`, and no two samples of a family share a
//! label set (the textfile collector rejects a whole file that repeats one).
//! The families and their labels are documented in `docs/metrics.md`.

use crate::doctor::{Finding, Severity, CHECK_IDS};
use crate::model::{HostState, OperState};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// `hw_counters/*` entries that count RoCE retransmissions and their causes
/// (mlx5 names, Linux `drivers/infiniband/hw/mlx5/counters.c`).
pub const RETRANSMIT_COUNTERS: &[&str] = &[
    "duplicate_request",
    "implied_nak_seq_err",
    "local_ack_timeout_err",
    "out_of_sequence",
    "packet_seq_err",
    "req_transport_retries_exceeded",
    "rnr_nak_retry_err",
    "roce_adp_retrans",
    "roce_adp_retrans_to",
    "roce_slow_restart",
];

/// `counters/*` and `hw_counters/*` entries that count dropped or discarded
/// packets (IB port counters; mlx5's `out_of_buffer`, `rx_*_discards`).
pub const DROP_COUNTERS: &[&str] = &[
    "out_of_buffer",
    "port_rcv_constraint_errors",
    "port_rcv_errors",
    "port_rcv_remote_physical_errors",
    "port_xmit_constraint_errors",
    "port_xmit_discards",
    "rx_dct_discards",
    "rx_write_requests_discards",
];

/// Congestion and flow-control counters: `port_xmit_wait` (ticks the port could
/// not send: PFC pause or no credits) and the DCQCN/ECN counters of mlx5.
pub const CONGESTION_COUNTERS: &[&str] = &[
    "np_cnp_sent",
    "np_ecn_marked_roce_packets",
    "port_xmit_wait",
    "rp_cnp_handled",
    "rp_cnp_ignored",
];

/// `hw_counters` entries that are settings, not counters.
const NOT_COUNTERS: &[&str] = &["lifespan"];

type Labels = Vec<(&'static str, String)>;

struct Family {
    name: &'static str,
    help: &'static str,
    kind: &'static str,
    samples: BTreeMap<Labels, u64>,
}

impl Family {
    fn new(name: &'static str, kind: &'static str, help: &'static str) -> Family {
        Family {
            name,
            help,
            kind,
            samples: BTreeMap::new(),
        }
    }

    fn set(&mut self, labels: Labels, v: u64) {
        self.samples.insert(labels, v);
    }

    fn add(&mut self, labels: Labels, v: u64) {
        *self.samples.entry(labels).or_default() += v;
    }

    fn write(&self, out: &mut String) {
        let _ = writeln!(out, "# HELP {} {}", self.name, escape_help(self.help));
        let _ = writeln!(out, "# TYPE {} {}", self.name, self.kind);
        for (labels, v) in &self.samples {
            out.push_str(self.name);
            let shown: Vec<&(&str, String)> =
                labels.iter().filter(|(_, v)| !v.is_empty()).collect();
            if !shown.is_empty() {
                out.push('{');
                for (i, (k, val)) in shown.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    let _ = write!(out, "{k}=\"{}\"", escape_label(val));
                }
                out.push('}');
            }
            let _ = writeln!(out, " {v}");
        }
    }
}

/// Label values: backslash, double quote and line feed are escaped.
fn escape_label(v: &str) -> String {
    let mut s = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '"' => s.push_str("\\\""),
            '\n' => s.push_str("\\n"),
            c => s.push(c),
        }
    }
    s
}

/// An interface name as a label value: the kernel's name itself, so that it
/// joins with node_exporter's `device` label for the same interface (which
/// carries the name as the kernel has it). The model keeps names escaped
/// (`a\\b` for the kernel's `a\b`, `model/ifname.rs`); escaping that form again
/// for the text format wrote `a\\\\b`, which a parser reads back as `a\\b`.
/// A name that is not UTF-8 (a label value must be) keeps the model's form.
fn ifname_label(name: &str) -> String {
    match crate::model::ifname_to_kernel(name).map(String::from_utf8) {
        Ok(Ok(kernel)) => kernel,
        _ => name.to_string(),
    }
}

/// HELP text: backslash and line feed are escaped.
fn escape_help(v: &str) -> String {
    v.replace('\\', "\\\\").replace('\n', "\\n")
}

fn sev(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "info",
    }
}

/// The metrics text for one host: `state` and the doctor findings over it
/// (`roce_net::doctor(&state)`, or any findings, fleet ones included).
pub fn render_metrics(state: &HostState, findings: &[Finding]) -> String {
    let mut fams = Vec::new();

    let mut info = Family::new(
        "roce_net_info",
        "gauge",
        "Always 1; the labels say which host, namespace and roce-net version produced these metrics.",
    );
    info.set(
        vec![
            ("hostname", state.hostname.clone()),
            ("netns", state.netns.clone().unwrap_or_default()),
            ("version", env!("CARGO_PKG_VERSION").to_string()),
        ],
        1,
    );
    fams.push(info);

    let mut ts = Family::new(
        "roce_net_snapshot_timestamp_seconds",
        "gauge",
        "When the snapshot behind these metrics was taken, seconds since the Unix epoch.",
    );
    ts.set(vec![], state.captured_at);
    fams.push(ts);

    let mut by_sev = Family::new(
        "roce_net_findings",
        "gauge",
        "Doctor findings by severity (every severity is always present).",
    );
    for s in [Severity::Error, Severity::Warning, Severity::Info] {
        by_sev.set(vec![("severity", sev(s).to_string())], 0);
    }
    let mut by_check = Family::new(
        "roce_net_check_findings",
        "gauge",
        "Findings per check id (every host check id is always present, 0 when it found nothing).",
    );
    for id in CHECK_IDS {
        by_check.set(vec![("check", (*id).to_string())], 0);
    }
    let mut each = Family::new(
        "roce_net_finding",
        "gauge",
        "Findings by check id, severity and subject (the value counts findings sharing these labels).",
    );
    for f in findings {
        by_sev.add(vec![("severity", sev(f.severity).to_string())], 1);
        // Fleet findings passed in count under their own ids.
        by_check.add(vec![("check", f.id.clone())], 1);
        let s = &f.subject;
        each.add(
            vec![
                ("check", f.id.clone()),
                ("severity", sev(f.severity).to_string()),
                ("host", s.host.clone().unwrap_or_default()),
                (
                    "interface",
                    s.interface.as_deref().map(ifname_label).unwrap_or_default(),
                ),
                ("device", s.device.clone().unwrap_or_default()),
                ("port", s.port.map(|p| p.to_string()).unwrap_or_default()),
                ("address", s.address.clone().unwrap_or_default()),
            ],
            1,
        );
    }
    fams.push(by_sev);
    fams.push(by_check);
    fams.push(each);

    let scope = crate::scope::nic_scope(state);
    let mut up = Family::new(
        "roce_net_nic_up",
        "gauge",
        "1 when the NIC in scope is administratively up with its link operationally up.",
    );
    let mut mtu = Family::new(
        "roce_net_nic_mtu_bytes",
        "gauge",
        "MTU of the NIC in scope.",
    );
    let mut dropped = Family::new(
        "roce_net_nic_dropped_packets_total",
        "counter",
        "Packets the kernel dropped on the NIC in scope (rtnetlink link stats rx_dropped / tx_dropped).",
    );
    let mut errors = Family::new(
        "roce_net_nic_errors_total",
        "counter",
        "Receive / transmit errors on the NIC in scope (rtnetlink link stats rx_errors / tx_errors).",
    );
    for n in &scope.nics {
        let Some(i) = state.interface(&n.ifname) else {
            continue;
        };
        let l = || vec![("interface", ifname_label(&i.name))];
        let is_up = i.admin_up && i.oper_state == OperState::Up;
        up.set(l(), u64::from(is_up));
        mtu.set(l(), u64::from(i.mtu));
        for (dir, d, e) in [
            ("rx", i.stats.rx_dropped, i.stats.rx_errors),
            ("tx", i.stats.tx_dropped, i.stats.tx_errors),
        ] {
            let mut lab = l();
            lab.push(("direction", dir.to_string()));
            dropped.set(lab.clone(), d);
            errors.set(lab, e);
        }
    }
    fams.extend([up, mtu, dropped, errors]);

    let mut active = Family::new(
        "roce_net_rdma_port_active",
        "gauge",
        "1 when the RDMA port's state is ACTIVE and its physical state LinkUp.",
    );
    let mut pinfo = Family::new(
        "roce_net_rdma_port_info",
        "gauge",
        "Always 1; the labels carry the RDMA port's state, physical state, link layer and rate text.",
    );
    let mut retrans = Family::new(
        "roce_net_rdma_retransmits_total",
        "counter",
        "RoCE retransmission counters of the RDMA port (hw_counters; counter label: the sysfs name).",
    );
    let mut drops = Family::new(
        "roce_net_rdma_drops_total",
        "counter",
        "Dropped or discarded packet counters of the RDMA port (counters and hw_counters).",
    );
    let mut congestion = Family::new(
        "roce_net_rdma_congestion_total",
        "counter",
        "Flow-control and congestion counters of the RDMA port: port_xmit_wait (PFC pause or no credits) and DCQCN/ECN.",
    );
    let mut all = Family::new(
        "roce_net_rdma_port_stats_total",
        "counter",
        "Every counter of the RDMA port: source counters (counters/) or hw_counters (hw_counters/).",
    );
    for d in &state.rdma {
        for p in &d.ports {
            let base = || {
                vec![
                    ("device", d.name.clone()),
                    ("port", p.port.to_string()),
                    (
                        "netdev",
                        p.netdev.as_deref().map(ifname_label).unwrap_or_default(),
                    ),
                ]
            };
            active.set(base(), u64::from(p.is_active()));
            let mut l = base();
            l.push(("state", p.state.as_deref().unwrap_or_default().to_string()));
            l.push((
                "phys_state",
                p.phys_state.as_deref().unwrap_or_default().to_string(),
            ));
            l.push((
                "link_layer",
                p.link_layer.as_deref().unwrap_or_default().to_string(),
            ));
            l.push(("rate", p.rate.clone().unwrap_or_default()));
            pinfo.set(l, 1);
            for (source, counters) in [("counters", &p.counters), ("hw_counters", &p.hw_counters)] {
                for (name, v) in counters.iter() {
                    if NOT_COUNTERS.contains(&name.as_str()) {
                        continue;
                    }
                    let mut l = base();
                    l.push(("counter", name.clone()));
                    if RETRANSMIT_COUNTERS.contains(&name.as_str()) {
                        retrans.set(l.clone(), *v);
                    }
                    if DROP_COUNTERS.contains(&name.as_str()) {
                        drops.set(l.clone(), *v);
                    }
                    if CONGESTION_COUNTERS.contains(&name.as_str()) {
                        congestion.set(l.clone(), *v);
                    }
                    l.push(("source", source.to_string()));
                    all.set(l, *v);
                }
            }
        }
    }
    fams.extend([active, pinfo, retrans, drops, congestion, all]);

    let mut out = String::new();
    for f in fams
        .iter()
        .filter(|f| !f.samples.is_empty() || f.name == "roce_net_finding")
    {
        f.write(&mut out);
    }
    out
}
