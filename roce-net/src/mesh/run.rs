//! One node's run of a mesh plan ([`Host::mesh_run`]): its snapshot and doctor
//! findings, its responder on every NIC, its probes round by round in the
//! plan's time slots, and its result document.
//!
//! **Time.** Round `r` (from 0) runs in the slot that starts at
//! `start_at_ms + r * round_ms` (the plan's wall-clock time: every node probes
//! in the same slots, so a NIC is target of `peers` probes per round, and the
//! run's wall time is the plan's, whatever the node count). A node that
//! starts after a slot has ended skips that round's probes (`late`). The
//! responder starts first, as the node's run starts (so an early node answers
//! before its own slot), and stops when every probe the schedule sends it has
//! come, at the end of the last slot plus a grace, or when asked.

use super::echo;
use super::prober::{self, Ctx};
use super::responder::{self, RdmaServe, Setup};
use super::result::{
    causes, LevelResult, MeshLevel, MeshNodeResult, MeshStatus, NicSeen, ProbeRecord,
    MESH_RESULT_VERSION,
};
use super::schedule::{MeshNodePlan, NodeSchedule, ScheduledProbe, MESH_END_GRACE_MS};
use crate::doctor::Severity;
use crate::error::{Error, ErrorKind, Result};
use crate::host::Host;
use crate::model::{in_netns, over_ssh, HostState};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// The longest a run waits for its first slot.
pub const MESH_MAX_WAIT_MS: u64 = 3_600_000;

/// How a node runs its part of a plan.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct MeshRunOptions {
    /// This node's name in the plan (default: [`crate::fleet_host_label`] of
    /// its snapshot, as the plan was made from it).
    pub host: Option<String>,
    /// Set to stop early: the responder and the rounds end within a tick and
    /// the result says `interrupted` (the RDMA servers end at their own bound).
    pub stop: Option<Arc<AtomicBool>>,
    /// The libibverbs the RDMA level's probes and servers load, as `probe
    /// rdma`'s `RdmaProbeOptions::verbs` (default `libibverbs.so.1`). As for
    /// `Host::probe_rdma`, its sysfs root is the host's
    /// ([`Host::with_sysfs_root`]), which the RDMA devices are read from.
    pub verbs: crate::kernel::verbs::VerbsOptions,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// This node's NICs of the plan as the snapshot shows them.
fn seen(state: &HostState, s: &NodeSchedule) -> Vec<NicSeen> {
    s.nics.iter().map(|n| NicSeen::of(state, &n.name)).collect()
}

impl Host {
    /// Run this node's part of a plan (see the module docs of `mesh`): the
    /// responder on every NIC, the probes in their slots, and the result.
    /// `plan` is the node's part ([`crate::MeshPlan::node_plan`]); it must be this
    /// host's (its name, [`crate::fleet_host_label`] of the snapshot, or
    /// `opts.host`). `Err` only when the run cannot start (another node's plan,
    /// its time window is over, the snapshot fails); a probe that fails is a
    /// result.
    pub fn mesh_run(&self, plan: &MeshNodePlan, opts: &MeshRunOptions) -> Result<MeshNodeResult> {
        plan.options.validate()?;
        let state = self.snapshot()?;
        let schedule = &plan.schedule;
        let name = opts
            .host
            .clone()
            .unwrap_or_else(|| crate::fleet::fleet_host_label(&state));
        if name != schedule.host {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!(
                    "this is mesh plan {}'s part for node {}, and this host is {name}: give \
                     each node its own part (or name the node: --host)",
                    schedule.plan, schedule.host
                ),
            ));
        }
        let started_at_ms = now_ms();
        let start_ms = if schedule.start_at_ms == 0 {
            started_at_ms + 500
        } else {
            schedule.start_at_ms
        };
        let end_ms = start_ms + u64::from(schedule.rounds) * schedule.round_ms + MESH_END_GRACE_MS;
        if end_ms <= started_at_ms {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!(
                    "mesh plan {}'s time is over: its last round ended {} s ago; make a new plan \
                     (roce-net mesh plan --start-in ...)",
                    schedule.plan,
                    (started_at_ms - end_ms) / 1000
                ),
            ));
        }
        if start_ms > started_at_ms + MESH_MAX_WAIT_MS {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!(
                    "mesh plan {} starts in {} s, more than an hour from now: check the clocks \
                     (NTP) or make a new plan",
                    schedule.plan,
                    (start_ms - started_at_ms) / 1000
                ),
            ));
        }
        let findings: Vec<crate::doctor::Finding> = crate::doctor::doctor(&state)
            .into_iter()
            .filter(|f| f.severity >= Severity::Warning)
            .collect();
        let nics = seen(&state, schedule);
        let stop = opts.stop.clone().unwrap_or_default();
        let t0 = Instant::now();
        let verbs = self.own_verbs(&opts.verbs);
        let (probes, responder, notes) = self
            .target()
            .run(|| Ok(self.rounds(plan, &state, &nics, (start_ms, end_ms), &verbs, &stop)))?;
        Ok(MeshNodeResult {
            version: MESH_RESULT_VERSION,
            plan: schedule.plan.clone(),
            host: name,
            hostname: state.hostname.clone(),
            netns: state.netns.clone(),
            started_at_ms,
            elapsed_ms: t0.elapsed().as_millis() as u64,
            nics,
            findings,
            probes,
            responder,
            notes,
        })
    }

    /// The responder and the rounds, on a thread inside this host's namespace.
    fn rounds(
        &self,
        plan: &MeshNodePlan,
        state: &HostState,
        nics: &[NicSeen],
        (start_ms, end_ms): (u64, u64),
        verbs: &crate::kernel::verbs::VerbsOptions,
        stop: &AtomicBool,
    ) -> (
        Vec<ProbeRecord>,
        super::result::ResponderReport,
        Vec<String>,
    ) {
        let o = &plan.options;
        let schedule = &plan.schedule;
        // One reading of both clocks: a wall-clock time is turned into an
        // instant against it.
        let (wall, now) = (now_ms(), Instant::now());
        let at = |t_ms: u64| -> Instant {
            if t_ms >= wall {
                now + Duration::from_millis(t_ms - wall)
            } else {
                now.checked_sub(Duration::from_millis(wall - t_ms))
                    .unwrap_or(now)
            }
        };
        let deadline = at(end_ms);
        let token = echo::digest(&o.token);
        let plan_word = echo::plan_word(&schedule.plan);
        let mut notes = Vec::new();
        let rdma = self.rdma_serve(plan, verbs, &mut notes);
        let here = |cmd: &str| over_ssh(&state.hostname, &in_netns(state.netns.as_deref(), cmd));
        // Routes first, one socket: what the kernel decides for each pair.
        let mut egress = HashMap::new();
        if let Ok(mut nl) = crate::kernel::netlink::Netlink::open() {
            for p in schedule.outgoing.iter().filter(|p| p.levels.ip) {
                egress
                    .entry((p.from.address, p.to.address))
                    .or_insert_with(|| {
                        nl.route_get(p.to.address, Some(p.from.address), None)
                            .map_err(|e| e.to_string())
                    });
            }
        }
        let seen: HashMap<String, NicSeen> =
            nics.iter().map(|n| (n.name.clone(), n.clone())).collect();
        let setup = Setup {
            schedule,
            state,
            host: self,
            port: o.port,
            token,
            plan: plan_word,
            deadline,
            stop,
            rdma,
        };
        let mut by_round: BTreeMap<u32, Vec<&ScheduledProbe>> = BTreeMap::new();
        for p in &schedule.outgoing {
            by_round.entry(p.round).or_default().push(p);
        }
        let mut records = Vec::new();
        let report = std::thread::scope(|scope| {
            let resp = scope.spawn(|| responder::serve(&setup));
            for (round, probes) in &by_round {
                let begin_ms = start_ms + u64::from(*round) * schedule.round_ms;
                let slot_end = at(begin_ms + schedule.round_ms);
                if Instant::now() >= slot_end {
                    for p in probes {
                        records.push(late(p, "this node started after the round's slot ended"));
                    }
                    continue;
                }
                // Wait for the slot.
                let begin = at(begin_ms);
                while Instant::now() < begin && !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(echo::left(begin).min(Duration::from_millis(50)));
                }
                if stop.load(Ordering::Relaxed) {
                    for p in probes {
                        records.push(late(p, "the run was interrupted"));
                    }
                    continue;
                }
                let ctx = Ctx {
                    state,
                    host: self,
                    options: o,
                    token,
                    plan: plan_word,
                    macs: &plan.macs,
                    egress: &egress,
                    seen: &seen,
                    here: &here,
                    round_end: slot_end,
                    verbs,
                };
                let got: Vec<ProbeRecord> = std::thread::scope(|s| {
                    let hs: Vec<_> = probes
                        .iter()
                        .map(|p| {
                            let ctx = &ctx;
                            s.spawn(move || prober::run(ctx, p))
                        })
                        .collect();
                    hs.into_iter()
                        .zip(probes.iter())
                        .map(|(h, p)| {
                            h.join()
                                .unwrap_or_else(|_| late(p, "the probe's thread panicked"))
                        })
                        .collect()
                });
                records.extend(got);
            }
            resp.join().unwrap_or_default()
        });
        (records, report, notes)
    }

    /// Whether and how this node serves RDMA, loading `verbs`.
    pub(super) fn rdma_serve(
        &self,
        plan: &MeshNodePlan,
        verbs: &crate::kernel::verbs::VerbsOptions,
        notes: &mut Vec<String>,
    ) -> Option<RdmaServe> {
        let schedule = &plan.schedule;
        if !schedule.incoming.iter().any(|p| p.levels.rdma) {
            return None;
        }
        if !cfg!(feature = "verbs") {
            notes.push(
                "the RDMA level was not run: this roce-net was built without the verbs feature"
                    .into(),
            );
            return None;
        }
        let view = self.verbs_view(verbs);
        if let Some(u) = &view.unavailable {
            notes.push(format!(
                "the RDMA level was not run: RDMA is not available here ({}: {})",
                u.reason, u.detail
            ));
            return None;
        }
        Some(RdmaServe {
            timeout: Duration::from_millis(plan.options.rdma_ms),
            port: plan.options.port + 1,
            token: plan.options.token.clone(),
            write_size: plan.options.rdma_workload.write_size as usize,
            verbs: verbs.clone(),
        })
    }
}

/// A probe not made: every level skipped.
fn late(p: &ScheduledProbe, why: &str) -> ProbeRecord {
    let mut levels = Vec::new();
    for (on, l) in [
        (p.levels.neighbor, MeshLevel::Neighbor),
        (p.levels.ip, MeshLevel::Ip),
        (p.levels.rdma, MeshLevel::Rdma),
    ] {
        if on {
            levels.push(LevelResult::not_passed(
                l,
                MeshStatus::Skipped,
                causes::LATE,
                format!("not run: {why}"),
                0,
            ));
        }
    }
    ProbeRecord {
        round: p.round,
        intra: p.intra,
        from: p.from.name.clone(),
        to_host: p.to_host.clone(),
        to: p.to.name.clone(),
        to_address: p.to.address,
        levels,
    }
}
