//! The schedule: which NIC probes which, in which round. Pure and
//! deterministic: a function of the inventory and the options alone, so every
//! node computes its own part of the same plan, and the merge the whole.
//!
//! **Between hosts.** The NICs of one rail are put in a ring (ordered by their
//! position among their host's NICs of that rail, then by host), and in each
//! round every NIC probes the NICs `d` places further on for `peers` offsets
//! `d`: each offset is a permutation of the ring, so in every round every NIC
//! is prober `peers` times and target `peers` times. Over `rounds` rounds a
//! NIC probes `peers x rounds` distinct peers and is probed by as many others;
//! the offsets are spread evenly over the ring (the first is 1, the next ones
//! far apart), so a NIC's peers are not all behind one switch of the rail. A
//! target on the prober's own host is replaced by the next NIC on the ring
//! that is not. Probes in all: `NICs x peers x rounds`, O(N); rounds and wall
//! time do not depend on the number of nodes. `all_pairs` uses every offset
//! instead: `n - 1` peers per NIC, in `ceil((n - 1) / peers)` rounds (for
//! small clusters). `rotation` shifts the offsets: another rotation probes
//! other pairs; the same one, the same pairs.
//!
//! **Within a host.** Every pair of a host's RDMA NICs is probed (NVIDIA's
//! nccl#1405: two NICs of one node that fail to reach each other while both
//! reach other hosts), by a round-robin tournament spread over the rounds, the
//! prober alternating. Only the RDMA level applies: the kernel delivers IP
//! between two local addresses itself, without the wire, and does not answer
//! an ARP request whose sender address is its own (`accept_local` off).

use super::inventory::{sorted, MeshInventory, MeshNic, MeshNode};
use crate::error::{Error, ErrorKind, Result};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// The version of the plan document ([`MeshPlan::version`]).
pub const MESH_PLAN_VERSION: u32 = 1;
/// The default UDP port of the IP-level echo ([`MeshOptions::port`]).
pub const MESH_DEFAULT_PORT: u16 = 18530;
/// Most peers per NIC per round.
pub const MESH_MAX_PEERS: u32 = 16;
/// Most rounds.
pub const MESH_MAX_ROUNDS: u32 = 64;

/// Which levels a mesh probes (each where the pair allows it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub struct MeshLevels {
    /// Neighbour level: who answers ARP (IPv4) or neighbour discovery (IPv6)
    /// for the peer's address, from which MAC.
    pub neighbor: bool,
    /// IP level: the request leaves by the source's own NIC, reaches the
    /// peer's NIC, and the reply comes back on the source's NIC, small and at
    /// the path's MTU.
    pub ip: bool,
    /// RDMA level: a short RC transfer with `probe rdma`, data verified, where
    /// both NICs back RDMA ports.
    pub rdma: bool,
}

impl Default for MeshLevels {
    fn default() -> Self {
        MeshLevels {
            neighbor: true,
            ip: true,
            rdma: true,
        }
    }
}

/// The RDMA level's traffic: small, so that a probe takes milliseconds on
/// hardware and seconds on emulated NICs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub struct MeshRdmaWorkload {
    /// Send/recv round trips (64-byte messages).
    pub latency_iterations: u32,
    /// Bytes per RDMA write.
    pub write_size: u32,
    /// RDMA writes each way.
    pub write_iterations: u32,
}

impl Default for MeshRdmaWorkload {
    fn default() -> Self {
        MeshRdmaWorkload {
            latency_iterations: 16,
            write_size: 65536,
            write_iterations: 4,
        }
    }
}

/// How the mesh is scheduled and bounded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub struct MeshOptions {
    /// Peers each NIC probes per round (1 to 16; default 2).
    pub peers: u32,
    /// Rounds (1 to 64; default 3). With `all_pairs`, the rounds are as many
    /// as the largest rail needs instead.
    pub rounds: u32,
    /// Probe every pair of each rail (small clusters).
    pub all_pairs: bool,
    /// Probe the pairs of each host's RDMA NICs among themselves.
    pub intra_host: bool,
    /// Shift the offsets: another rotation, other pairs.
    pub rotation: u32,
    /// The levels.
    pub levels: MeshLevels,
    /// UDP port of the IP echo on every NIC; the RDMA exchange of every NIC
    /// listens on TCP `port + 1` on the NIC's own address.
    pub port: u16,
    /// Neighbour level: how long each probe listens for answers, ms.
    pub neighbor_ms: u64,
    /// IP level: how long each of the two echoes (small, at the MTU) may
    /// take, ms.
    pub ip_ms: u64,
    /// RDMA level: each probe's bound, ms.
    pub rdma_ms: u64,
    /// RDMA level: the traffic.
    pub rdma_workload: MeshRdmaWorkload,
    /// When round 1 starts, ms since the Unix epoch (0: as soon as each node
    /// has started its responder; the rounds are then not synchronised
    /// between nodes). Nodes start their responders as they come and probe
    /// in fixed slots from this time, so clocks must agree within the slack
    /// of a round (NTP).
    pub start_at_ms: u64,
    /// A secret of this run: responders answer only probes that carry it.
    pub token: String,
}

impl Default for MeshOptions {
    fn default() -> Self {
        MeshOptions {
            peers: 2,
            rounds: 3,
            all_pairs: false,
            intra_host: true,
            rotation: 0,
            levels: MeshLevels::default(),
            port: MESH_DEFAULT_PORT,
            neighbor_ms: 1000,
            ip_ms: 1000,
            rdma_ms: 10_000,
            rdma_workload: MeshRdmaWorkload::default(),
            start_at_ms: 0,
            token: String::new(),
        }
    }
}

/// Slack added to each round, for clocks and thread start-up.
pub const MESH_ROUND_SLACK_MS: u64 = 1000;
/// How long a responder stays after the last round, for late probers.
pub const MESH_END_GRACE_MS: u64 = 2000;

impl MeshOptions {
    /// Check the numbers: `InvalidInput` naming the option and its range.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::new(ErrorKind::InvalidInput, m));
        if !(1..=MESH_MAX_PEERS).contains(&self.peers) {
            return bad(format!(
                "peers {} out of range: 1 to {MESH_MAX_PEERS} per NIC per round",
                self.peers
            ));
        }
        if !(1..=MESH_MAX_ROUNDS).contains(&self.rounds) {
            return bad(format!(
                "rounds {} out of range: 1 to {MESH_MAX_ROUNDS}",
                self.rounds
            ));
        }
        if self.port == 0 || self.port == 65535 {
            return bad(format!(
                "port {} out of range: 1 to 65534 (the RDMA exchanges use the port above it)",
                self.port
            ));
        }
        for (name, v, max) in [
            ("neighbor_ms", self.neighbor_ms, 60_000),
            ("ip_ms", self.ip_ms, 60_000),
            ("rdma_ms", self.rdma_ms, 600_000),
        ] {
            if v < 10 || v > max {
                return bad(format!("{name} {v} out of range: 10 to {max} ms"));
            }
        }
        let w = &self.rdma_workload;
        if w.latency_iterations == 0 || w.latency_iterations > 100_000 {
            return bad(format!(
                "rdma latency_iterations {} out of range: 1 to 100000",
                w.latency_iterations
            ));
        }
        if w.write_size == 0 || w.write_size > 16 << 20 {
            return bad(format!(
                "rdma write_size {} out of range: 1 to {} bytes",
                w.write_size,
                16 << 20
            ));
        }
        if w.write_iterations == 0 || w.write_iterations > 100_000 {
            return bad(format!(
                "rdma write_iterations {} out of range: 1 to 100000",
                w.write_iterations
            ));
        }
        if self.token.len() > 128 || !self.token.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return bad("the token must be at most 128 letters and digits".to_string());
        }
        if !(self.levels.neighbor || self.levels.ip || self.levels.rdma) {
            return bad("no level to probe: enable neighbor, ip or rdma".to_string());
        }
        Ok(())
    }

    /// The length of one round, ms, when some pair has RDMA (`rdma`): every
    /// enabled level of one pair one after the other (a NIC's probes of one
    /// round run at once), plus slack.
    pub fn round_ms(&self, rdma: bool) -> u64 {
        let mut t = MESH_ROUND_SLACK_MS;
        if self.levels.neighbor {
            t += self.neighbor_ms;
        }
        if self.levels.ip {
            t += 2 * self.ip_ms;
        }
        if self.levels.rdma && rdma {
            t += self.rdma_ms;
        }
        t
    }
}

/// A mesh plan: the inventory (sorted) and the options. Every node runs its
/// part of it ([`MeshPlan::node_schedule`]); the merge reads all of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub struct MeshPlan {
    /// [`MESH_PLAN_VERSION`].
    pub version: u32,
    /// Names the schedule: a hash of the inventory and of the options that
    /// choose the pairs (not the token or the start time), so a re-run of the
    /// same inventory has the same id and probes the same pairs.
    pub id: String,
    /// The options.
    pub options: MeshOptions,
    /// The nodes, in natural name order, each node's NICs too.
    pub inventory: MeshInventory,
}

/// A NIC of the plan by position: node index and NIC index in the sorted
/// inventory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NicId(pub u32);

/// One probe of the schedule (by NIC ids).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MeshProbe {
    /// Its round, from 0.
    pub round: u32,
    /// The prober.
    pub from: NicId,
    /// The target.
    pub to: NicId,
    /// Both NICs are on one host.
    pub intra: bool,
}

/// Build a plan: the inventory sorted and checked, the options checked.
pub fn mesh_plan(inventory: &MeshInventory, options: &MeshOptions) -> Result<MeshPlan> {
    options.validate()?;
    inventory.validate()?;
    let inventory = sorted(inventory);
    let id = plan_id(&inventory, options);
    Ok(MeshPlan {
        version: MESH_PLAN_VERSION,
        id,
        options: options.clone(),
        inventory,
    })
}

/// FNV-1a over the canonical JSON of what chooses the pairs.
fn plan_id(inv: &MeshInventory, o: &MeshOptions) -> String {
    let chooses = serde_json::json!({
        "inventory": inv,
        "peers": o.peers, "rounds": o.rounds, "all_pairs": o.all_pairs,
        "intra_host": o.intra_host, "rotation": o.rotation, "levels": o.levels,
    });
    let text = serde_json::to_string(&chooses).unwrap_or_default();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// The plan's NICs numbered, and its rails as rings.
#[derive(Debug)]
pub(crate) struct Layout {
    /// Global id -> (node, nic) positions.
    pub nics: Vec<(u32, u32)>,
    /// First global id of each node.
    pub first: Vec<u32>,
    /// Rails by name: their rings (global ids).
    pub rails: BTreeMap<String, Vec<u32>>,
    /// Node index by host name.
    pub hosts: HashMap<String, u32>,
    /// Each NIC's position on its rail's ring.
    pub pos: Vec<u32>,
    /// Per rail: the longest run of consecutive ring positions on one host
    /// (1 when a host has one NIC per rail).
    pub runs: BTreeMap<String, usize>,
}

impl Layout {
    pub(crate) fn new(plan: &MeshPlan) -> Layout {
        let mut nics = Vec::new();
        let mut first = Vec::with_capacity(plan.inventory.nodes.len());
        let mut rails: BTreeMap<String, Vec<(usize, u32, u32)>> = BTreeMap::new();
        let mut hosts = HashMap::with_capacity(plan.inventory.nodes.len());
        for (ni, node) in plan.inventory.nodes.iter().enumerate() {
            first.push(nics.len() as u32);
            hosts.insert(node.host.clone(), ni as u32);
            let mut rank: BTreeMap<&str, usize> = BTreeMap::new();
            for (ki, nic) in node.nics.iter().enumerate() {
                let g = nics.len() as u32;
                nics.push((ni as u32, ki as u32));
                let r = rank.entry(nic.rail.as_str()).or_default();
                rails
                    .entry(nic.rail.clone())
                    .or_default()
                    .push((*r, ni as u32, g));
                *r += 1;
            }
        }
        let rails: BTreeMap<String, Vec<u32>> = rails
            .into_iter()
            .map(|(name, mut m)| {
                // Same-host members far apart on the ring.
                m.sort_unstable();
                (name, m.into_iter().map(|(_, _, g)| g).collect())
            })
            .collect();
        let mut pos = vec![0u32; nics.len()];
        let mut runs = BTreeMap::new();
        for (name, ring) in &rails {
            let mut longest = 1;
            let mut run = 1;
            for (i, &g) in ring.iter().enumerate() {
                pos[g as usize] = i as u32;
                if i > 0 && nics[g as usize].0 == nics[ring[i - 1] as usize].0 {
                    run += 1;
                    longest = longest.max(run);
                } else {
                    run = 1;
                }
            }
            // The ring closes: a run may wrap around.
            runs.insert(name.clone(), (longest + 1).min(ring.len()));
        }
        Layout {
            nics,
            first,
            rails,
            hosts,
            pos,
            runs,
        }
    }

    pub(crate) fn node_of(&self, g: u32) -> u32 {
        self.nics[g as usize].0
    }
}

impl MeshPlan {
    /// The number of rounds the schedule uses.
    pub fn round_count(&self) -> u32 {
        if !self.options.all_pairs {
            return self.options.rounds;
        }
        self.rounds_in(&Layout::new(self))
    }

    fn rounds_in(&self, layout: &Layout) -> u32 {
        let o = &self.options;
        if !o.all_pairs {
            return o.rounds;
        }
        let largest = layout.rails.values().map(Vec::len).max().unwrap_or(0);
        (largest.saturating_sub(1) as u32).div_ceil(o.peers).max(1)
    }

    /// The length of one round, ms ([`MeshOptions::round_ms`], with the RDMA
    /// level's time when two NICs of the plan back RDMA ports).
    pub fn round_ms(&self) -> u64 {
        let rdma = self
            .inventory
            .nodes
            .iter()
            .flat_map(|n| n.nics.iter())
            .filter(|n| n.rdma)
            .nth(1)
            .is_some();
        self.options.round_ms(rdma)
    }

    /// The node and NIC of an id.
    pub fn nic(&self, id: NicId) -> Option<(&MeshNode, &MeshNic)> {
        // Ids number the NICs node after node.
        let mut left = id.0 as usize;
        for node in &self.inventory.nodes {
            if left < node.nics.len() {
                return Some((node, &node.nics[left]));
            }
            left -= node.nics.len();
        }
        None
    }

    /// The TCP port of the RDMA exchanges: each NIC's server listens on its
    /// own address, all on this one port.
    pub fn rdma_port(&self) -> u16 {
        self.options.port + 1
    }

    /// Every probe of the schedule, round by round, in a stable order.
    pub fn probes(&self) -> Vec<MeshProbe> {
        let layout = Layout::new(self);
        let mut out = Vec::new();
        for ring in layout.rails.values() {
            ring_probes(self, &layout, ring, &mut out);
        }
        if self.options.intra_host {
            for ni in 0..self.inventory.nodes.len() {
                intra_probes(self, &layout, ni as u32, &mut out);
            }
        }
        out.sort_unstable_by_key(|p| (p.round, p.from, p.to));
        out
    }

    /// The part of the schedule one node runs: its probes and the probes it
    /// must answer, with the peers' addresses. `NotFound` when `host` is not in
    /// the plan.
    pub fn node_schedule(&self, host: &str) -> Result<NodeSchedule> {
        let layout = Layout::new(self);
        let Some(&ni) = layout.hosts.get(host) else {
            let known: Vec<&str> = self
                .inventory
                .nodes
                .iter()
                .take(8)
                .map(|n| n.host.as_str())
                .collect();
            return Err(Error::new(
                ErrorKind::NotFound,
                format!(
                    "host {host:?} is not in mesh plan {} (its nodes: {}{}); give the node's \
                     name as the plan has it (--host), or make the plan from this node's \
                     snapshot",
                    self.id,
                    known.join(", "),
                    if self.inventory.nodes.len() > 8 {
                        ", ..."
                    } else {
                        ""
                    }
                ),
            ));
        };
        Ok(self.node_schedule_in(&layout, ni))
    }

    /// Every node's schedule, node after node, computed against one layout of
    /// the plan (what [`MeshPlan::node_schedule`] gives for each, without
    /// rebuilding it per node).
    pub fn node_schedules(&self) -> impl Iterator<Item = NodeSchedule> + '_ {
        let layout = Layout::new(self);
        (0..self.inventory.nodes.len() as u32).map(move |ni| self.node_schedule_in(&layout, ni))
    }

    /// Node `ni`'s share: the probes of its NICs as provers (their targets on
    /// their rails) and as targets (the probers whose targets they are), and
    /// its intra-host pairs; no other NIC's probes are computed.
    fn node_schedule_in(&self, layout: &Layout, ni: u32) -> NodeSchedule {
        let node = &self.inventory.nodes[ni as usize];
        let first = layout.first[ni as usize];
        let mut probes = Vec::new();
        for g in first..first + node.nics.len() as u32 {
            let rail = &node.nics[(g - first) as usize].rail;
            let Some(ring) = layout.rails.get(rail) else {
                continue;
            };
            let offs = offsets(&self.options, ring.len());
            if offs.is_empty() {
                continue;
            }
            let p = layout.pos[g as usize] as usize;
            for (to, round) in prober_targets(layout, ring, &offs, p) {
                probes.push(MeshProbe {
                    round,
                    from: NicId(g),
                    to: NicId(to),
                    intra: false,
                });
            }
            // The probers whose targets include g: d (plus the shifts past
            // their own host's NICs) places before it.
            let n = ring.len();
            let run = layout.runs.get(rail).copied().unwrap_or(1);
            let mut candidates = BTreeSet::new();
            for &(d, _) in &offs {
                for back in 0..=run {
                    candidates.insert((p + 2 * n - (d as usize % n) - (back % n)) % n);
                }
            }
            for i in candidates {
                if layout.node_of(ring[i]) == ni {
                    continue;
                }
                if let Some((_, round)) = prober_targets(layout, ring, &offs, i)
                    .into_iter()
                    .find(|&(to, _)| to == g)
                {
                    probes.push(MeshProbe {
                        round,
                        from: NicId(ring[i]),
                        to: NicId(g),
                        intra: false,
                    });
                }
            }
        }
        if self.options.intra_host {
            intra_probes(self, layout, ni, &mut probes);
        }
        probes.sort_unstable_by_key(|p| (p.round, p.from, p.to));
        probes.dedup();
        let mut outgoing = Vec::new();
        let mut incoming = Vec::new();
        for p in probes {
            if layout.node_of(p.from.0) == ni {
                outgoing.push(self.scheduled(layout, &p));
            }
            if layout.node_of(p.to.0) == ni {
                incoming.push(self.scheduled(layout, &p));
            }
        }
        let o = &self.options;
        let rounds = self.rounds_in(layout);
        let round_ms = self.round_ms();
        NodeSchedule {
            plan: self.id.clone(),
            host: node.host.clone(),
            nics: node.nics.clone(),
            rounds,
            round_ms,
            start_at_ms: o.start_at_ms,
            end_at_ms: if o.start_at_ms == 0 {
                0
            } else {
                o.start_at_ms + u64::from(rounds) * round_ms + MESH_END_GRACE_MS
            },
            outgoing,
            incoming,
        }
    }

    fn scheduled(&self, layout: &Layout, p: &MeshProbe) -> ScheduledProbe {
        let (fnode, fnic) = layout.nics[p.from.0 as usize];
        let (tnode, tnic) = layout.nics[p.to.0 as usize];
        let fnode = &self.inventory.nodes[fnode as usize];
        let tnode = &self.inventory.nodes[tnode as usize];
        let from = &fnode.nics[fnic as usize];
        let to = &tnode.nics[tnic as usize];
        ScheduledProbe {
            round: p.round,
            intra: p.intra,
            from_host: fnode.host.clone(),
            from: from.clone(),
            to_host: tnode.host.clone(),
            to: to.clone(),
            levels: pair_levels(&self.options.levels, from, to, p.intra),
            rdma_port: self.rdma_port(),
        }
    }
}

/// The levels that apply to a pair.
pub(crate) fn pair_levels(l: &MeshLevels, from: &MeshNic, to: &MeshNic, intra: bool) -> MeshLevels {
    let rdma = l.rdma && from.rdma && to.rdma;
    if intra {
        return MeshLevels {
            neighbor: false,
            ip: false,
            rdma,
        };
    }
    MeshLevels {
        neighbor: l.neighbor,
        ip: l.ip,
        rdma,
    }
}

/// The offsets of a ring of `n` (from 1), and the round of each.
fn offsets(o: &MeshOptions, n: usize) -> Vec<(u32, u32)> {
    if n < 2 {
        return Vec::new();
    }
    let m = (n - 1) as u64;
    let want = if o.all_pairs {
        m
    } else {
        m.min(u64::from(o.peers) * u64::from(o.rounds))
    };
    (0..want)
        .map(|j| {
            let spread = j * m / want;
            let d = 1 + (spread + u64::from(o.rotation)) % m;
            (d as u32, (j / u64::from(o.peers)) as u32)
        })
        .collect()
}

fn ring_probes(plan: &MeshPlan, layout: &Layout, ring: &[u32], out: &mut Vec<MeshProbe>) {
    let offs = offsets(&plan.options, ring.len());
    if offs.is_empty() {
        return;
    }
    for (i, &from) in ring.iter().enumerate() {
        for (to, round) in prober_targets(layout, ring, &offs, i) {
            out.push(MeshProbe {
                round,
                from: NicId(from),
                to: NicId(to),
                intra: false,
            });
        }
    }
}

/// The targets of the NIC at ring position `i`, with their rounds: for each
/// offset `d`, the `d`-th next NIC, or the next one after it on another host;
/// a target reached twice keeps its first round.
fn prober_targets(layout: &Layout, ring: &[u32], offs: &[(u32, u32)], i: usize) -> Vec<(u32, u32)> {
    let n = ring.len();
    let host = layout.node_of(ring[i]);
    let mut out: Vec<(u32, u32)> = Vec::with_capacity(offs.len());
    for &(d, round) in offs {
        let target = (0..n)
            .map(|s| ring[(i + d as usize + s) % n])
            .find(|&t| layout.node_of(t) != host);
        let Some(to) = target else { break };
        if !out.iter().any(|&(t, _)| t == to) {
            out.push((to, round));
        }
    }
    out
}

fn intra_probes(plan: &MeshPlan, layout: &Layout, ni: u32, out: &mut Vec<MeshProbe>) {
    let node = &plan.inventory.nodes[ni as usize];
    let first = layout.first[ni as usize];
    let members: Vec<u32> = node
        .nics
        .iter()
        .enumerate()
        .filter(|(_, n)| plan.options.levels.rdma && n.rdma)
        .map(|(k, _)| first + k as u32)
        .collect();
    let m = members.len();
    if m < 2 {
        return;
    }
    // The circle method: with a bye when odd, `size - 1` rounds of disjoint
    // pairs (positions in `members`; the bye is the position past its end).
    let size = m + m % 2;
    let rounds = plan.rounds_in(layout);
    for t in 0..size - 1 {
        // Position 0 stays, the others rotate by t.
        let at = |k: usize| -> usize {
            if k == 0 {
                0
            } else {
                1 + (k - 1 + t) % (size - 1)
            }
        };
        for k in 0..size / 2 {
            let (i, j) = (at(k).min(at(size - 1 - k)), at(k).max(at(size - 1 - k)));
            let (Some(&a), Some(&b)) = (members.get(i), members.get(j)) else {
                continue;
            };
            // Balanced: each NIC probes about half of its pairs.
            let (from, to) = if (i + j) % 2 == 1 { (a, b) } else { (b, a) };
            out.push(MeshProbe {
                round: t as u32 % rounds,
                from: NicId(from),
                to: NicId(to),
                intra: true,
            });
        }
    }
}

/// What one node needs of a plan to run its part (`Host::mesh_run`): the
/// options, its schedule, and the MACs of the NICs of every node it probes or
/// is probed by (to name whose MAC answered). Small: a few dozen KB whatever
/// the cluster's size, so an orchestrator can hand each node its own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub struct MeshNodePlan {
    /// [`MESH_PLAN_VERSION`].
    pub version: u32,
    /// The plan's options (its token and start time).
    pub options: MeshOptions,
    /// The node's share of the schedule.
    pub schedule: NodeSchedule,
    /// MAC (lower case) -> `host nic`, for this node's NICs and those of every
    /// node in its schedule.
    pub macs: BTreeMap<String, String>,
}

impl MeshPlan {
    /// The part of the plan node `host` runs. `NotFound` when the plan has no
    /// such node.
    pub fn node_plan(&self, host: &str) -> Result<MeshNodePlan> {
        let s = self.node_schedule(host)?;
        Ok(self.node_plan_of(s))
    }

    /// Every node's part, node after node (one layout of the plan for all).
    pub fn node_plans(&self) -> impl Iterator<Item = MeshNodePlan> + '_ {
        self.node_schedules().map(move |s| self.node_plan_of(s))
    }

    fn node_plan_of(&self, schedule: NodeSchedule) -> MeshNodePlan {
        let mut hosts: BTreeSet<&str> = BTreeSet::new();
        hosts.insert(schedule.host.as_str());
        for p in schedule.outgoing.iter().chain(schedule.incoming.iter()) {
            hosts.insert(p.from_host.as_str());
            hosts.insert(p.to_host.as_str());
        }
        let macs = self
            .inventory
            .nodes
            .iter()
            .filter(|n| hosts.contains(n.host.as_str()))
            .flat_map(|n| {
                n.nics.iter().filter_map(move |k| {
                    k.mac
                        .as_ref()
                        .map(|m| (m.to_ascii_lowercase(), format!("{} {}", n.host, k.name)))
                })
            })
            .collect();
        MeshNodePlan {
            version: MESH_PLAN_VERSION,
            options: self.options.clone(),
            schedule,
            macs,
        }
    }
}

/// One probe as a node runs it: the peer's name, address and RDMA port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub struct ScheduledProbe {
    /// Its round, from 0.
    pub round: u32,
    /// Both NICs on one host.
    pub intra: bool,
    /// The prober's node.
    pub from_host: String,
    /// The prober's NIC.
    pub from: MeshNic,
    /// The target's node.
    pub to_host: String,
    /// The target's NIC.
    pub to: MeshNic,
    /// The levels that apply to this pair.
    pub levels: MeshLevels,
    /// The TCP port of the target NIC's RDMA exchange.
    pub rdma_port: u16,
}

/// What one node does in a plan: its probes, and the probes it answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub struct NodeSchedule {
    /// The plan's id.
    pub plan: String,
    /// This node.
    pub host: String,
    /// Its NICs.
    pub nics: Vec<MeshNic>,
    /// Rounds.
    pub rounds: u32,
    /// Length of a round, ms.
    pub round_ms: u64,
    /// When round 1 starts (ms since the epoch; 0: at once).
    pub start_at_ms: u64,
    /// When the responder stops at the latest (ms since the epoch; 0: the
    /// run's own start plus the rounds and the grace).
    pub end_at_ms: u64,
    /// The probes this node makes, by round.
    pub outgoing: Vec<ScheduledProbe>,
    /// The probes it answers, by round.
    pub incoming: Vec<ScheduledProbe>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{IpAddr, Ipv4Addr};

    /// `hosts` nodes of `nics` NICs, every NIC in one /16 (rails by position).
    pub(crate) fn inventory(hosts: usize, nics: usize) -> MeshInventory {
        let nodes = (0..hosts)
            .map(|h| {
                let mut list: Vec<MeshNic> = (0..nics)
                    .map(|k| {
                        let ip = IpAddr::V4(Ipv4Addr::from(
                            0xc612_0000u32 + (h as u32) * 64 + k as u32 + 1,
                        ));
                        let mut n = MeshNic::new(&format!("r{k}"), ip, 16, "");
                        n.rdma = true;
                        n
                    })
                    .collect();
                super::super::inventory::assign_rails(&mut list, Default::default());
                MeshNode::new(&format!("h{h}"), list)
            })
            .collect();
        MeshInventory::new(nodes)
    }

    fn plan(hosts: usize, nics: usize, o: &MeshOptions) -> MeshPlan {
        mesh_plan(&inventory(hosts, nics), o).unwrap()
    }

    #[test]
    fn every_nic_probes_and_is_probed_by_peers_times_rounds_on_its_rail() {
        let o = MeshOptions::default();
        let p = plan(50, 4, &o);
        let probes = p.probes();
        let inter: Vec<_> = probes.iter().filter(|x| !x.intra).collect();
        assert_eq!(inter.len(), 50 * 4 * 6);
        let mut out: BTreeMap<NicId, BTreeSet<NicId>> = BTreeMap::new();
        let mut inn: BTreeMap<NicId, BTreeSet<NicId>> = BTreeMap::new();
        for x in &inter {
            let (_, a) = p.nic(x.from).unwrap();
            let (_, b) = p.nic(x.to).unwrap();
            assert_eq!(a.rail, b.rail, "probes stay on a rail");
            assert_ne!(p.nic(x.from).unwrap().0.host, p.nic(x.to).unwrap().0.host);
            out.entry(x.from).or_default().insert(x.to);
            inn.entry(x.to).or_default().insert(x.from);
        }
        assert_eq!(out.len(), 200);
        assert!(out.values().all(|s| s.len() == 6), "6 distinct peers each");
        assert!(
            inn.values().all(|s| s.len() == 6),
            "probed by 6 distinct peers each"
        );
        // Each round is a set of permutations: every NIC probes `peers` times
        // and is probed `peers` times.
        for r in 0..3 {
            let mut count: BTreeMap<NicId, (u32, u32)> = BTreeMap::new();
            for x in inter.iter().filter(|x| x.round == r) {
                count.entry(x.from).or_default().0 += 1;
                count.entry(x.to).or_default().1 += 1;
            }
            assert!(count.values().all(|&c| c == (2, 2)), "round {r}: {count:?}");
        }
    }

    #[test]
    fn rounds_and_per_nic_load_do_not_grow_with_the_cluster() {
        let o = MeshOptions::default();
        for hosts in [10, 100, 1000] {
            let p = plan(hosts, 8, &o);
            assert_eq!(p.round_count(), 3);
            let probes = p.probes();
            let inter = probes.iter().filter(|x| !x.intra).count();
            assert_eq!(inter, hosts * 8 * 6, "O(N): {hosts} hosts");
            // Intra-host: 8 NICs, 28 pairs per host.
            assert_eq!(probes.len() - inter, hosts * 28);
            assert!(probes.iter().all(|x| x.round < 3));
        }
    }

    #[test]
    fn intra_host_pairs_cover_every_pair_once_and_alternate_the_prober() {
        let p = plan(3, 8, &MeshOptions::default());
        let probes = p.probes();
        let host0: Vec<_> = probes
            .iter()
            .filter(|x| x.intra && p.nic(x.from).unwrap().0.host == "h0")
            .collect();
        let pairs: BTreeSet<(NicId, NicId)> = host0
            .iter()
            .map(|x| (x.from.min(x.to), x.from.max(x.to)))
            .collect();
        assert_eq!(host0.len(), 28);
        assert_eq!(pairs.len(), 28);
        let probers: BTreeMap<NicId, usize> = host0.iter().fold(BTreeMap::new(), |mut m, x| {
            *m.entry(x.from).or_default() += 1;
            m
        });
        assert_eq!(probers.len(), 8, "every NIC is a prober: {probers:?}");
        assert!(
            probers.values().all(|&c| (3..=4).contains(&c)),
            "{probers:?}"
        );
        // Three NICs: odd, with a bye.
        let p = plan(2, 3, &MeshOptions::default());
        assert_eq!(p.probes().iter().filter(|x| x.intra).count(), 2 * 3);
    }

    #[test]
    fn deterministic_whatever_the_inventory_order_and_rotation_changes_pairs() {
        let o = MeshOptions::default();
        let a = plan(40, 4, &o);
        let mut inv = inventory(40, 4);
        inv.nodes.reverse();
        for n in &mut inv.nodes {
            n.nics.reverse();
        }
        let b = mesh_plan(&inv, &o).unwrap();
        assert_eq!(a.id, b.id);
        assert_eq!(a.probes(), b.probes());
        let rotated = plan(
            40,
            4,
            &MeshOptions {
                rotation: 7,
                ..o.clone()
            },
        );
        assert_ne!(a.id, rotated.id);
        assert_ne!(a.probes(), rotated.probes());
        // The token and start time do not choose pairs.
        let later = plan(
            40,
            4,
            &MeshOptions {
                token: "abc".into(),
                start_at_ms: 5,
                ..o
            },
        );
        assert_eq!(a.id, later.id);
    }

    #[test]
    fn all_pairs_probes_every_pair_of_a_rail_and_small_rails_use_every_offset() {
        let o = MeshOptions {
            all_pairs: true,
            ..MeshOptions::default()
        };
        let p = plan(7, 2, &o);
        assert_eq!(p.round_count(), 3); // 6 offsets, 2 per round
        let inter = p.probes().iter().filter(|x| !x.intra).count();
        assert_eq!(inter, 2 * 7 * 6);
        // Three hosts, default options: every other NIC of the rail is a peer.
        let p = plan(3, 2, &MeshOptions::default());
        let inter: Vec<_> = p.probes().into_iter().filter(|x| !x.intra).collect();
        assert_eq!(inter.len(), 2 * 3 * 2);
    }

    #[test]
    fn a_node_schedule_is_its_share_of_the_whole() {
        let p = plan(20, 4, &MeshOptions::default());
        let all = p.probes();
        let s = p.node_schedule("h7").unwrap();
        let mine_out = all
            .iter()
            .filter(|x| p.nic(x.from).unwrap().0.host == "h7")
            .count();
        let mine_in = all
            .iter()
            .filter(|x| p.nic(x.to).unwrap().0.host == "h7")
            .count();
        assert_eq!(s.outgoing.len(), mine_out);
        assert_eq!(s.incoming.len(), mine_in);
        assert!(s.outgoing.iter().all(|x| x.from_host == "h7"));
        let intra = s.outgoing.iter().find(|x| x.intra).unwrap();
        assert_eq!(
            intra.levels,
            MeshLevels {
                neighbor: false,
                ip: false,
                rdma: true
            }
        );
        let e = p.node_schedule("nope").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound);
        assert!(e.message().contains("h0, h1"), "{e}");
    }

    /// Each node's schedule, computed from its own NICs alone, is exactly
    /// its share of the whole schedule: as prober and as target, with the
    /// rounds, also where a rail holds several NICs of one host (the shift past
    /// them) and with a rotation.
    #[test]
    fn every_node_computes_exactly_its_share_of_the_whole_schedule() {
        for (rail_by, rotation) in [
            (super::super::inventory::RailBy::Auto, 0),
            (super::super::inventory::RailBy::Subnet, 0),
            (super::super::inventory::RailBy::Subnet, 5),
        ] {
            let mut inv = inventory(23, 3);
            for n in &mut inv.nodes {
                super::super::inventory::assign_rails(&mut n.nics, rail_by);
            }
            let o = MeshOptions {
                rotation,
                ..MeshOptions::default()
            };
            let p = mesh_plan(&inv, &o).unwrap();
            let all = p.probes();
            let key = |x: &ScheduledProbe| {
                (
                    x.round,
                    x.from_host.clone(),
                    x.from.name.clone(),
                    x.to_host.clone(),
                    x.to.name.clone(),
                )
            };
            // The whole schedule's probes from (or to) `host`, keyed as `key`.
            let whole = |host: &str, end: fn(&MeshProbe) -> NicId| -> BTreeSet<_> {
                all.iter()
                    .filter(|x| p.nic(end(x)).unwrap().0.host == host)
                    .map(|x| {
                        let (fh, fnic) = p.nic(x.from).unwrap();
                        let (th, tnic) = p.nic(x.to).unwrap();
                        (
                            x.round,
                            fh.host.clone(),
                            fnic.name.clone(),
                            th.host.clone(),
                            tnic.name.clone(),
                        )
                    })
                    .collect()
            };
            let mut seen_out = 0;
            for (s, node) in p.node_schedules().zip(p.inventory.nodes.iter()) {
                assert_eq!(s, p.node_schedule(&node.host).unwrap());
                let want_out = whole(&node.host, |x| x.from);
                let want_in = whole(&node.host, |x| x.to);
                let got_out: BTreeSet<_> = s.outgoing.iter().map(key).collect();
                let got_in: BTreeSet<_> = s.incoming.iter().map(key).collect();
                assert_eq!(got_out, want_out, "{rail_by:?} {}", node.host);
                assert_eq!(got_in, want_in, "{rail_by:?} {}", node.host);
                assert_eq!(s.outgoing.len(), got_out.len());
                seen_out += s.outgoing.len();
            }
            assert_eq!(seen_out, all.len());
        }
    }

    #[test]
    fn a_rail_with_several_nics_of_one_host_never_pairs_them() {
        let mut inv = inventory(5, 4);
        for n in &mut inv.nodes {
            super::super::inventory::assign_rails(
                &mut n.nics,
                super::super::inventory::RailBy::Subnet,
            );
        }
        let p = mesh_plan(&inv, &MeshOptions::default()).unwrap();
        for x in p.probes().iter().filter(|x| !x.intra) {
            assert_ne!(p.nic(x.from).unwrap().0.host, p.nic(x.to).unwrap().0.host);
        }
    }

    #[test]
    fn options_out_of_range_are_refused_with_their_name() {
        for (o, word) in [
            (
                MeshOptions {
                    peers: 0,
                    ..Default::default()
                },
                "peers",
            ),
            (
                MeshOptions {
                    rounds: 1000,
                    ..Default::default()
                },
                "rounds",
            ),
            (
                MeshOptions {
                    rdma_ms: 1,
                    ..Default::default()
                },
                "rdma_ms",
            ),
            (
                MeshOptions {
                    token: "a b".into(),
                    ..Default::default()
                },
                "token",
            ),
        ] {
            let e = mesh_plan(&inventory(2, 1), &o).unwrap_err();
            assert!(e.message().contains(word), "{e}");
        }
    }
}
