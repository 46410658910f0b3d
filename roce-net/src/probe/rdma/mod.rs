//! `probe rdma`: RDMA traffic between two hosts, the proof that a fix worked.
//!
//! Like `ib_write_bw`/`ibv_rc_pingpong`, in the library: the device, port and GID
//! index come from a source IP (the RoCE v2 GID of that address, as the NCCL
//! advice chooses it); the two ends swap queue-pair numbers, PSNs, GIDs, MTUs and
//! buffer keys over a TCP connection (as perftest does); an RC queue pair moves
//! data both ways (send/recv ping-pong for latency, RDMA write each way for
//! bandwidth, checked byte for byte); every step has a deadline. A failure comes
//! back translated into its likely cause, with evidence from the host's snapshot
//! ([`ProbeFailure`]). See `docs/rdma-probe.md`.
//!
//! The verbs calls sit behind [`Backend`]/[`Queue`] (libibverbs in production,
//! a software model in the tests), so the exchange, the timeouts and the
//! reporting run for real without RDMA hardware.

mod engine;
mod explain;
mod ibverbs;
mod select;
mod status;
mod token;
mod wire;

#[cfg(test)]
pub(crate) mod tests;

pub use explain::Cause;
use select::RdmaSelection;
pub use token::ProbeToken;

use crate::error::Result;
use crate::kernel::verbs::VerbsOptions;
use crate::model::{HostState, PortState};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv6Addr};
use std::time::Duration;

/// The TCP port the two ends exchange queue-pair details on (perftest's 18515
/// plus 5, so a running `ib_write_bw` server does not collide).
pub const DEFAULT_TCP_PORT: u16 = 18520;

/// What to probe and how long it may take.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RdmaProbeOptions {
    /// The local RDMA address to probe from (its netdev's RDMA port and RoCE v2
    /// GID are used). Client default: the source the routing table picks for the
    /// peer. Required for a server.
    pub source: Option<IpAddr>,
    /// Use this RDMA device (must back the source address's netdev).
    pub device: Option<String>,
    /// Use this port of the device.
    pub port: Option<u32>,
    /// Use this GID index instead of the RoCE v2 GID of the source address (to
    /// reproduce what a job with `NCCL_IB_GID_INDEX` does).
    pub gid_index: Option<u32>,
    /// TCP port for the exchange (default [`DEFAULT_TCP_PORT`]).
    pub tcp_port: u16,
    /// Server: the address to listen on (default: `source`, so the probe is
    /// reachable only where RDMA is tested; `0.0.0.0` or `::` for every
    /// address of the namespace).
    pub listen: Option<IpAddr>,
    /// The shared token both ends must prove they hold before either sends
    /// what identifies it (default none: any peer that speaks the protocol is
    /// served). Both ends need the same token, or none.
    pub token: Option<ProbeToken>,
    /// Message size of the send/recv latency test, bytes (default 64). A
    /// server serves clients asking for at most its own size.
    pub latency_size: usize,
    /// Round trips in the latency test (default 1000).
    pub latency_iterations: u32,
    /// Size of each RDMA write, bytes (default 65536). A server serves clients
    /// asking for at most its own size, and registers no more than that.
    pub write_size: usize,
    /// RDMA writes each way (default 1000).
    pub write_iterations: u32,
    /// Path MTU to use instead of the smaller of both ports' active MTUs.
    pub mtu: Option<u32>,
    /// Client: the whole run's limit. Server: the limit of each session.
    pub timeout: Duration,
    /// Server: stop after this many client sessions (default 1).
    pub clients: usize,
    /// Server: stop accepting after this long (default 60 s).
    pub duration: Duration,
    /// Where libibverbs is and how to explain its absence.
    pub verbs: VerbsOptions,
}

impl Default for RdmaProbeOptions {
    fn default() -> Self {
        RdmaProbeOptions {
            source: None,
            device: None,
            port: None,
            gid_index: None,
            tcp_port: DEFAULT_TCP_PORT,
            listen: None,
            token: None,
            latency_size: 64,
            latency_iterations: 1000,
            write_size: 65536,
            write_iterations: 1000,
            mtu: None,
            timeout: Duration::from_secs(10),
            clients: 1,
            duration: Duration::from_secs(60),
            verbs: VerbsOptions::default(),
        }
    }
}

/// Largest message either test moves (the registered buffer's size).
pub const MAX_MESSAGE: usize = 16 << 20;
/// Most iterations of either test.
pub const MAX_ITERATIONS: u32 = 10_000_000;
/// Most sessions one server run accepts.
pub const MAX_CLIENTS: usize = 4096;
/// Most connections a server holds open before their hello is valid (each
/// for at most `timeout`); more wait in the kernel's listen backlog.
pub const MAX_PENDING_CONNECTIONS: usize = 32;
/// Longest client timeout or server duration.
pub const MAX_DURATION: Duration = Duration::from_secs(24 * 3600);

impl RdmaProbeOptions {
    /// Check the numbers before anything is opened: `InvalidInput` naming the
    /// option and its range.
    pub fn validate(&self) -> Result<()> {
        use crate::error::{Error, ErrorKind};
        let bad = |m: String| Err(Error::new(ErrorKind::InvalidInput, m));
        if self.latency_size == 0 || self.latency_size > MAX_MESSAGE {
            return bad(format!(
                "latency size {} is out of range: 1 to {MAX_MESSAGE} bytes",
                self.latency_size
            ));
        }
        if self.write_size == 0 || self.write_size > MAX_MESSAGE {
            return bad(format!(
                "write size {} is out of range: 1 to {MAX_MESSAGE} bytes",
                self.write_size
            ));
        }
        if self.latency_iterations == 0 || self.latency_iterations > MAX_ITERATIONS {
            return bad(format!(
                "latency iterations {} out of range: 1 to {MAX_ITERATIONS}",
                self.latency_iterations
            ));
        }
        if self.write_iterations == 0 || self.write_iterations > MAX_ITERATIONS {
            return bad(format!(
                "write iterations {} out of range: 1 to {MAX_ITERATIONS}",
                self.write_iterations
            ));
        }
        if let Some(m) = self.mtu {
            if crate::model::ib_mtu_enum(m).is_none() {
                return bad(format!(
                    "MTU {m} is not an RDMA MTU: use 256, 512, 1024, 2048 or 4096"
                ));
            }
        }
        if self.timeout.is_zero() || self.timeout > MAX_DURATION {
            return bad(format!(
                "timeout {:?} out of range: more than 0 and at most 24 h",
                self.timeout
            ));
        }
        if self.duration.is_zero() || self.duration > MAX_DURATION {
            return bad(format!(
                "server duration {:?} out of range: more than 0 and at most 24 h",
                self.duration
            ));
        }
        if self.clients == 0 || self.clients > MAX_CLIENTS {
            return bad(format!(
                "clients {} out of range: 1 to {MAX_CLIENTS}",
                self.clients
            ));
        }
        if self.tcp_port == 0 {
            return bad("TCP port 0 is not a port: give 1 to 65535".to_string());
        }
        if self.port == Some(0) {
            return bad("RDMA port 0 does not exist: ports count from 1".to_string());
        }
        Ok(())
    }
}

/// Which end of the probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProbeRole {
    /// Connected to a server.
    Client,
    /// Accepted a client.
    Server,
}

/// One end's RDMA identity as used in the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct EndpointSummary {
    /// Host name.
    pub host: String,
    /// RDMA device.
    pub device: String,
    /// Port.
    pub port: u32,
    /// GID index.
    pub gid_index: u32,
    /// The GID.
    pub gid: Ipv6Addr,
    /// The address the GID stands for (IPv4-mapped GIDs: the IPv4 address).
    pub address: IpAddr,
    /// The netdev of the port.
    pub netdev: Option<String>,
    /// That netdev's MAC.
    pub mac: Option<String>,
    /// The port's active MTU (bytes).
    pub active_mtu: Option<u32>,
    /// Queue pair number.
    pub qpn: u32,
}

/// Latency of the send/recv ping-pong: half the round trip, as `ib_send_lat`
/// reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Latency {
    /// Message size, bytes.
    pub size: usize,
    /// Round trips.
    pub iterations: u32,
    /// Fastest one-way time, microseconds.
    pub min_us: f64,
    /// Median.
    pub median_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// Slowest.
    pub max_us: f64,
}

/// One direction of RDMA writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Bandwidth {
    /// Bytes per write.
    pub size: usize,
    /// Writes.
    pub iterations: u32,
    /// Bytes moved.
    pub bytes: u64,
    /// Time from the first post to the last completion, seconds.
    pub seconds: f64,
    /// Bytes * 8 / seconds / 1e9.
    pub gbit_per_s: f64,
    /// The receiving end compared the last write with what was sent.
    pub verified: bool,
}

crate::named::named_enum! {
    /// The stage a probe failed at.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, JsonSchema)]
    pub enum Stage (fn name, serde) {
        /// Checks before anything is opened (port state, GID).
        Preflight = "preflight",
        /// The TCP connection to the peer.
        Connect = "connect",
        /// The proof of the shared token, before either end says who it is.
        Token = "token",
        /// The exchange of queue-pair details.
        Exchange = "exchange",
        /// Opening the device, PD, CQ, MR, QP (to INIT).
        Open = "open",
        /// `ibv_modify_qp` to RTR: the kernel resolves the peer's MAC here.
        ReadyToReceive = "ready_to_receive",
        /// `ibv_modify_qp` to RTS.
        ReadyToSend = "ready_to_send",
        /// The send/recv ping-pong.
        SendRecv = "send_recv",
        /// RDMA writes to the peer.
        WriteToPeer = "write_to_peer",
        /// RDMA writes from the peer.
        WriteFromPeer = "write_from_peer",
        /// The peer reported a failure of its own.
        Peer = "peer",
    }
}

/// The raw failure, as the verbs call, the completion or the wait reported it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum FailureValue {
    /// A verbs or socket call returned this errno.
    Errno {
        /// The errno.
        errno: i32,
        /// Its name (`ETIMEDOUT`).
        name: String,
    },
    /// A work completion had this status (`ibv_wc_status`).
    Completion {
        /// The status number (12 = retry exceeded).
        status: u32,
        /// `ibv_wc_status_str` text.
        name: String,
        /// The vendor's syndrome.
        vendor_err: u32,
    },
    /// The stage's deadline passed.
    Timeout {
        /// How long it waited, milliseconds.
        waited_ms: u64,
    },
    /// Something else (protocol violations, a check that failed).
    Other {
        /// What.
        message: String,
    },
}

impl std::fmt::Display for FailureValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FailureValue::Errno { errno, name } => write!(
                f,
                "{name} ({})",
                std::io::Error::from_raw_os_error(*errno)
                    .to_string()
                    .split(" (os error")
                    .next()
                    .unwrap_or("")
            ),
            FailureValue::Completion {
                status,
                name,
                vendor_err,
            } => write!(
                f,
                "completion status {status} ({name}), vendor error {vendor_err:#x}"
            ),
            FailureValue::Timeout { waited_ms } => write!(f, "no answer within {waited_ms} ms"),
            FailureValue::Other { message } => f.write_str(message),
        }
    }
}

/// A failed probe: where, the raw value, and its likely cause with evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProbeFailure {
    /// The stage.
    pub stage: Stage,
    /// What was reported.
    pub value: FailureValue,
    /// The likely cause.
    pub cause: Cause,
    /// One paragraph for people: cause, evidence, what to do.
    pub message: String,
    /// The values that point to the cause.
    pub evidence: BTreeMap<String, serde_json::Value>,
    /// Commands that fix or confirm it.
    pub fix: Vec<String>,
    /// The peer's own report of the failure, when it sent one.
    pub peer: Option<String>,
}

/// The outcome of one probe session (one client against one server).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RdmaProbeReport {
    /// This end's role.
    pub role: ProbeRole,
    /// Did every test pass?
    pub ok: bool,
    /// This end.
    pub local: Option<EndpointSummary>,
    /// The other end, once the exchange told us.
    pub peer: Option<EndpointSummary>,
    /// The TCP address of the peer.
    pub peer_tcp: Option<String>,
    /// The path MTU the queue pair used.
    pub path_mtu: Option<u32>,
    /// The send/recv ping-pong.
    pub latency: Option<Latency>,
    /// RDMA writes from this end to the peer.
    pub write_to_peer: Option<Bandwidth>,
    /// RDMA writes from the peer to this end.
    pub write_from_peer: Option<Bandwidth>,
    /// Why it failed.
    pub failure: Option<ProbeFailure>,
    /// Remarks (a GID choice that differs from NCCL's, ...).
    pub notes: Vec<String>,
    /// Wall time of the session, milliseconds.
    pub elapsed_ms: u64,
}

/// A connection a server refused before it counted as a client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RejectedConnection {
    /// The TCP address it came from.
    pub peer_tcp: String,
    /// Why: no greeting within the timeout, not the probe protocol, another
    /// version, the wrong token, parameters beyond this server's limits, the
    /// server already had its clients or had stopped.
    pub reason: String,
    /// How long it was held open, milliseconds.
    pub elapsed_ms: u64,
}

/// Most refused connections a server report lists (`rejected_count` counts all).
pub const MAX_REJECTED_LISTED: usize = 64;

/// What a server run did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RdmaServerReport {
    /// The TCP address it listened on.
    pub listen: String,
    /// This end.
    pub local: Option<EndpointSummary>,
    /// One report per client session, in the order they ended. A connection
    /// counts as a client only once its hello was valid (the protocol, the
    /// token, parameters within this server's limits).
    pub sessions: Vec<RdmaProbeReport>,
    /// Connections refused before they counted as a client, the first
    /// [`MAX_REJECTED_LISTED`].
    pub rejected: Vec<RejectedConnection>,
    /// How many connections were refused in all.
    pub rejected_count: u64,
    /// True when every session passed and at least one ran (refused
    /// connections do not change it).
    pub ok: bool,
    /// Why it stopped: `clients` (the count was reached) or `duration`.
    pub stopped: String,
}

/// A verbs call's failure as the backend reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct VerbsFailure {
    /// The verbs call (`ibv_modify_qp(RTR)`).
    pub call: String,
    /// Its errno, when it gave one.
    pub errno: Option<i32>,
}

impl VerbsFailure {
    pub(crate) fn new(call: &str, errno: Option<i32>) -> VerbsFailure {
        VerbsFailure {
            call: call.to_string(),
            errno,
        }
    }
}

/// One work completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Completion {
    pub wr_id: u64,
    /// `ibv_wc_status` (0 = success).
    pub status: u32,
    pub vendor_err: u32,
    /// Received bytes (receive completions).
    pub byte_len: u32,
}

/// The local half of a queue pair, to be sent to the peer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct QueueInfo {
    pub qpn: u32,
    pub psn: u32,
    pub lid: u16,
    pub rkey: u32,
    pub addr: u64,
    pub len: u64,
    /// The port's active MTU, bytes, as the device reports it now.
    pub active_mtu: Option<u32>,
    /// The port's state as the device reports it now (`ACTIVE`, ...).
    pub port_state: Option<PortState>,
}

/// What connecting to the peer needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ConnectParams {
    pub dest_qpn: u32,
    pub dest_psn: u32,
    pub dest_lid: u16,
    pub dgid: Ipv6Addr,
    pub sgid_index: u32,
    pub port: u32,
    pub path_mtu: u32,
}

/// A connected (or connectable) RC queue pair with its registered buffer.
pub(crate) trait Queue: Send {
    /// The local identity to send to the peer.
    fn info(&self) -> QueueInfo;
    /// Move the queue pair to RTR then RTS towards the peer.
    fn connect(&mut self, p: &ConnectParams) -> Result<(), (Stage, VerbsFailure)>;
    /// Copy into the registered buffer at `off`.
    fn write_local(&mut self, off: usize, data: &[u8]);
    /// Copy out of the registered buffer.
    fn read_local(&self, off: usize, len: usize) -> Vec<u8>;
    /// Post a receive of `len` bytes at `off`.
    fn post_recv(&mut self, wr_id: u64, off: usize, len: usize) -> Result<(), VerbsFailure>;
    /// Post a signaled send of `len` bytes from `off`.
    fn post_send(&mut self, wr_id: u64, off: usize, len: usize) -> Result<(), VerbsFailure>;
    /// Post a signaled RDMA write of `len` bytes from `off` to the peer's `raddr`.
    fn post_write(
        &mut self,
        wr_id: u64,
        off: usize,
        len: usize,
        raddr: u64,
        rkey: u32,
    ) -> Result<(), VerbsFailure>;
    /// One completion if there is one (never blocks long).
    fn poll(&mut self) -> Result<Option<Completion>, VerbsFailure>;
}

/// Opens queue pairs: libibverbs, or a model of it in the tests.
pub(crate) trait Backend: Sync {
    /// Fails when RDMA is unusable here (no library, no kernel support, no
    /// devices): checked before any selection or connection.
    fn available(&self) -> Result<()>;
    /// Open the selected port and create an RC queue pair (in INIT) with a
    /// registered buffer of `buf_len` bytes and room for `depth` outstanding
    /// work requests each way.
    fn open(
        &self,
        sel: &RdmaSelection,
        buf_len: usize,
        depth: u32,
    ) -> std::result::Result<Box<dyn Queue>, VerbsFailure>;
}

/// The production backend: libibverbs loaded at run time.
pub(crate) fn verbs_backend(opts: &VerbsOptions) -> ibverbs::VerbsBackend {
    ibverbs::VerbsBackend::new(opts.clone())
}

/// Run the client against `peer` (the server's TCP address) from `state`'s
/// host, in the calling thread's namespace; `refresh` re-reads the host to
/// explain a failure.
pub(crate) fn run_client(
    state: &HostState,
    peer: IpAddr,
    opts: &RdmaProbeOptions,
    refresh: &(dyn Fn() -> Option<HostState> + Sync),
) -> Result<RdmaProbeReport> {
    opts.validate()?;
    #[cfg(test)]
    if let Some(b) = tests::fake_backend(&opts.verbs) {
        return engine::client(&b, state, peer, opts, refresh);
    }
    let b = verbs_backend(&opts.verbs);
    engine::client(&b, state, peer, opts, refresh)
}

/// Run the server from `state`'s host, in the calling thread's namespace.
pub(crate) fn run_server(
    state: &HostState,
    opts: &RdmaProbeOptions,
    refresh: &(dyn Fn() -> Option<HostState> + Sync),
) -> Result<RdmaServerReport> {
    opts.validate()?;
    #[cfg(test)]
    if let Some(b) = tests::fake_backend(&opts.verbs) {
        return engine::server(&b, state, opts, refresh);
    }
    let b = verbs_backend(&opts.verbs);
    engine::server(&b, state, opts, refresh)
}
