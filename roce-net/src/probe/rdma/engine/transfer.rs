//! The verified RDMA writes each end makes into the other's buffer: post them,
//! say what was written, and check what the peer wrote.

use super::super::wire::{pattern, Channel, Endpoint, Msg};
use super::super::{Bandwidth, ProbeRole, Stage};
use super::completions::{wait, Qp, Until};
use super::{recv_msg, Fail, Session, Transfer, DEPTH, WR_WRITE};
use std::collections::HashSet;
use std::time::Instant;

/// Writes `t.iterations` times `t.size` bytes of `pattern(seed)` to the peer;
/// the seconds it took and the bytes written.
fn write_phase(
    q: &mut Qp<'_>,
    ch: &mut Channel,
    peer: &Endpoint,
    t: Transfer,
    seed: u64,
    deadline: Instant,
    stage: Stage,
) -> std::result::Result<(f64, u64), Fail> {
    if (t.size as u64) > peer.len {
        return Err(Fail::other(
            stage,
            format!(
                "the peer's buffer has {} bytes, the writes need {}",
                peer.len, t.size
            ),
        ));
    }
    q.write_local(0, &pattern(seed, t.size));
    let started = Instant::now();
    let mut posted = 0u32;
    let mut outstanding: HashSet<u64> = HashSet::new();
    while posted < t.iterations || !outstanding.is_empty() {
        while posted < t.iterations && outstanding.len() < DEPTH as usize {
            let id = WR_WRITE | u64::from(posted);
            q.post_write(id, 0, t.size, peer.addr, peer.rkey)
                .map_err(|e| Fail::verbs(stage, e))?;
            outstanding.insert(id);
            posted += 1;
        }
        let mut want = outstanding.clone();
        for c in wait(q, ch, &mut want, Until::Any, deadline, stage)? {
            outstanding.remove(&c.wr_id);
        }
    }
    Ok((
        started.elapsed().as_secs_f64(),
        u64::from(t.iterations) * t.size as u64,
    ))
}

/// The two ends of a session, named for messages: (us, the peer).
fn ends(role: ProbeRole) -> (&'static str, &'static str) {
    match role {
        ProbeRole::Client => ("the client", "the server"),
        ProbeRole::Server => ("the server", "the client"),
    }
}

/// Our half of the data check: [`write_phase`] into the peer's buffer, tell it
/// what we wrote (`WriteDone`), and wait for its `Verified`. Records
/// `write_to_peer` (unverified when the peer found a difference) and fails with
/// the peer's own account of the difference.
pub(super) fn send_writes(
    q: &mut Qp<'_>,
    ch: &mut Channel,
    s: &mut Session<'_>,
    theirs: &Endpoint,
    t: Transfer,
    seed: u64,
    deadline: Instant,
) -> std::result::Result<(), Fail> {
    let stage = Stage::WriteToPeer;
    let (secs, bytes) = write_phase(q, ch, theirs, t, seed, deadline, stage)?;
    ch.send(
        &Msg::WriteDone {
            seed,
            len: t.size,
            seconds: secs,
            bytes,
        },
        deadline,
    )
    .map_err(|e| Fail::wire(stage, e))?;
    let (ok, detail) = match recv_msg(ch, deadline, stage)? {
        Msg::Verified { ok, detail } => (ok, detail),
        m => {
            return Err(Fail::other(
                stage,
                format!("expected verified, got {}", m.name()),
            ))
        }
    };
    s.rep.write_to_peer = Some(bandwidth(t.size, t.iterations, secs, bytes, ok));
    if !ok {
        let (us, peer) = ends(s.rep.role);
        return Err(Fail::other(
            stage,
            format!("{peer} found the data {us} wrote corrupted: {detail}"),
        ));
    }
    Ok(())
}

/// The peer's half of the data check, seen from here: wait for its
/// `WriteDone`, compare our buffer with the pattern it names, and answer
/// `Verified`. A length beyond our buffer (`me.len`) is refused before any
/// comparison, so a hostile peer cannot make us allocate more. Records
/// `write_from_peer` and fails with the same detail the peer is sent.
pub(super) fn check_peer_writes(
    q: &mut Qp<'_>,
    ch: &mut Channel,
    s: &mut Session<'_>,
    me: &Endpoint,
    t: Transfer,
    deadline: Instant,
) -> std::result::Result<(), Fail> {
    let stage = Stage::WriteFromPeer;
    let (seed, len, secs, bytes) = match recv_msg(ch, deadline, stage)? {
        Msg::WriteDone {
            seed,
            len,
            seconds,
            bytes,
        } => (seed, len, seconds, bytes),
        m => {
            return Err(Fail::other(
                stage,
                format!("expected write-done, got {}", m.name()),
            ))
        }
    };
    let (us, peer) = ends(s.rep.role);
    let problem = if len as u64 > me.len {
        Some(format!(
            "{peer} says it wrote {len} bytes, more than {us}'s {}-byte buffer",
            me.len
        ))
    } else if len != t.size {
        // Both ends agreed on the write size: a shorter claim (down to 0 bytes)
        // would otherwise "verify" less than was written, or nothing.
        Some(format!(
            "{peer} says it wrote {len} bytes; the probe agreed on {}-byte writes",
            t.size
        ))
    } else if q.read_local(0, len) != pattern(seed, len) {
        Some(format!(
            "the last {len} bytes {peer} wrote to {us} differ from what it sent"
        ))
    } else {
        None
    };
    let ok = problem.is_none();
    ch.send(
        &Msg::Verified {
            ok,
            detail: problem.clone().unwrap_or_default(),
        },
        deadline,
    )
    .map_err(|e| Fail::wire(stage, e))?;
    s.rep.write_from_peer = Some(bandwidth(len, t.iterations, secs, bytes, ok));
    match problem {
        Some(p) => Err(Fail::other(stage, p)),
        None => Ok(()),
    }
}

fn bandwidth(size: usize, iterations: u32, seconds: f64, bytes: u64, verified: bool) -> Bandwidth {
    Bandwidth {
        size,
        iterations,
        bytes,
        seconds,
        gbit_per_s: if seconds > 0.0 {
            bytes as f64 * 8.0 / seconds / 1e9
        } else {
            0.0
        },
        verified,
    }
}

#[cfg(test)]
pub(super) mod tests {
    //! `check_peer_writes` against a peer speaking the wire protocol by hand:
    //! what a session over the NIC model cannot make a peer claim.
    use super::super::endpoint;
    use super::*;
    use crate::model::HostState;
    use crate::probe::rdma::select::RdmaSelection;
    use crate::probe::rdma::{
        Completion, ConnectParams, FailureValue, Queue, QueueInfo, VerbsFailure,
    };
    use std::net::{TcpListener, TcpStream};
    use std::time::Duration;

    /// Memory only: the check reads the local buffer and nothing else. Its
    /// queue never completes anything; each poll takes `poll_takes` (a loaded
    /// machine) and is counted in `polls` (for the completion wait's tests).
    pub(in crate::probe::rdma::engine) struct Memory {
        buf: Vec<u8>,
        pub(in crate::probe::rdma::engine) poll_takes: Duration,
        pub(in crate::probe::rdma::engine) polls: u32,
    }

    impl Memory {
        pub(in crate::probe::rdma::engine) fn new(buf: Vec<u8>) -> Memory {
            Memory {
                buf,
                poll_takes: Duration::ZERO,
                polls: 0,
            }
        }
    }

    impl Queue for Memory {
        fn info(&self) -> QueueInfo {
            QueueInfo {
                qpn: 1,
                psn: 2,
                lid: 0,
                rkey: 3,
                addr: 0x1000,
                len: self.buf.len() as u64,
                active_mtu: Some(1024),
                port_state: Some("ACTIVE".into()),
            }
        }
        fn connect(&mut self, _: &ConnectParams) -> std::result::Result<(), (Stage, VerbsFailure)> {
            Ok(())
        }
        fn write_local(&mut self, off: usize, data: &[u8]) {
            self.buf[off..off + data.len()].copy_from_slice(data);
        }
        fn read_local(&self, off: usize, len: usize) -> Vec<u8> {
            let end = off.saturating_add(len).min(self.buf.len());
            self.buf[off.min(end)..end].to_vec()
        }
        fn post_recv(
            &mut self,
            _: u64,
            _: usize,
            _: usize,
        ) -> std::result::Result<(), VerbsFailure> {
            Err(VerbsFailure::new("memory: no receives", None))
        }
        fn post_send(
            &mut self,
            _: u64,
            _: usize,
            _: usize,
        ) -> std::result::Result<(), VerbsFailure> {
            Err(VerbsFailure::new("memory: no sends", None))
        }
        fn post_write(
            &mut self,
            _: u64,
            _: usize,
            _: usize,
            _: u64,
            _: u32,
        ) -> std::result::Result<(), VerbsFailure> {
            Err(VerbsFailure::new("memory: no writes", None))
        }
        fn poll(&mut self) -> std::result::Result<Option<Completion>, VerbsFailure> {
            self.polls += 1;
            std::thread::sleep(self.poll_takes);
            Ok(None)
        }
    }

    fn selection() -> RdmaSelection {
        serde_json::from_value(serde_json::json!({
            "device": "mem0", "port": 1, "gid_index": 3, "gid": "::ffff:198.18.0.1",
            "gid_type": null, "address": "198.18.0.1", "netdev": "eth0", "mac": null,
            "netdev_mtu": null, "port_state": "ACTIVE", "phys_state": null,
            "link_layer": "Ethernet", "active_mtu": 1024, "nccl_gid_index": null,
            "notes": []
        }))
        .unwrap()
    }

    /// The client (holding `buf`), having agreed on 4096-byte writes, is told by
    /// the "server" that it wrote `len` bytes of `pattern(7)`: what the client
    /// answers and concludes.
    fn client_checks(buf: Vec<u8>, len: usize) -> (Msg, std::result::Result<(), Fail>, Bandwidth) {
        let st = HostState::empty("h");
        let mut s = Session::new(ProbeRole::Client, &st, selection());
        let mut mem = Memory::new(buf);
        let me = endpoint(&st, &s.sel, &mem);
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut peer = Channel::new(TcpStream::connect(l.local_addr().unwrap()).unwrap()).unwrap();
        let mut ch = Channel::new(l.accept().unwrap().0).unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        let done = Msg::WriteDone {
            seed: 7,
            len,
            seconds: 0.5,
            bytes: (len as u64).saturating_mul(10),
        };
        peer.send(&done, deadline).unwrap();
        let mut q = Qp {
            q: &mut mem,
            stash: Vec::new(),
        };
        let agreed = Transfer {
            size: 4096,
            iterations: 10,
        };
        let r = check_peer_writes(&mut q, &mut ch, &mut s, &me, agreed, deadline);
        (
            peer.recv(deadline).unwrap(),
            r,
            s.rep.write_from_peer.unwrap(),
        )
    }

    fn failed_with(r: std::result::Result<(), Fail>, want: &str) {
        let f = r.expect_err("the check should fail");
        assert_eq!(f.stage, Stage::WriteFromPeer);
        match f.value {
            FailureValue::Other { message } => assert_eq!(message, want),
            v => panic!("{v:?}"),
        }
    }

    #[test]
    fn the_pattern_the_peer_names_is_verified() {
        let mut buf = pattern(7, 4096);
        buf.extend([0u8; 1024]);
        let (answer, r, bw) = client_checks(buf, 4096);
        assert!(r.is_ok());
        assert!(matches!(answer, Msg::Verified { ok: true, detail } if detail.is_empty()));
        assert!(bw.verified && bw.size == 4096 && bw.bytes == 40960);
    }

    #[test]
    fn a_difference_is_refused_with_the_same_account_on_both_ends() {
        let mut buf = pattern(7, 4096);
        buf[4095] ^= 1;
        let (answer, r, bw) = client_checks(buf, 4096);
        let want = "the last 4096 bytes the server wrote to the client differ from what it sent";
        assert!(matches!(answer, Msg::Verified { ok: false, ref detail } if detail == want));
        failed_with(r, want);
        assert!(!bw.verified);
    }

    #[test]
    fn a_length_beyond_our_buffer_is_refused_before_any_comparison() {
        // Even a buffer that holds the pattern's first 4096 bytes: the claim is
        // checked against the buffer first (a huge claim would otherwise
        // allocate that much for the pattern).
        let (answer, r, bw) = client_checks(pattern(7, 4096), 4097);
        let want = "the server says it wrote 4097 bytes, more than the client's 4096-byte buffer";
        assert!(matches!(answer, Msg::Verified { ok: false, ref detail } if detail == want));
        failed_with(r, want);
        assert!(!bw.verified);
        let (_, r, _) = client_checks(vec![0; 64], usize::MAX);
        assert!(r.is_err());
    }

    #[test]
    fn a_claim_of_fewer_bytes_than_agreed_verifies_nothing() {
        // The first 100 bytes hold the pattern, the rest does not: a peer that
        // claims 100 (or 0) bytes must not pass the check.
        let mut buf = pattern(7, 100);
        buf.extend([0u8; 3996]);
        for len in [100, 0] {
            let (answer, r, bw) = client_checks(buf.clone(), len);
            let want = format!(
                "the server says it wrote {len} bytes; the probe agreed on 4096-byte writes"
            );
            assert!(matches!(answer, Msg::Verified { ok: false, ref detail } if *detail == want));
            failed_with(r, &want);
            assert!(!bw.verified);
        }
    }
}
