//! The queue pair's completions: the ones that arrived while another was
//! awaited, how a wait idles, and the one loop that waits.

use super::super::status::wc_status_name;
use super::super::wire::Channel;
use super::super::{Completion, FailureValue, Queue, Stage, VerbsFailure};
use super::{peer_stop, Fail};
use std::collections::HashSet;
use std::time::{Duration, Instant};

/// A queue pair with the completions that arrived while another one was awaited
/// (a receive completing while the send before it is still unacknowledged).
pub(super) struct Qp<'a> {
    pub(super) q: &'a mut dyn Queue,
    pub(super) stash: Vec<Completion>,
}

impl Qp<'_> {
    pub(super) fn post_recv(
        &mut self,
        wr_id: u64,
        off: usize,
        len: usize,
    ) -> std::result::Result<(), VerbsFailure> {
        self.q.post_recv(wr_id, off, len)
    }
    pub(super) fn post_send(
        &mut self,
        wr_id: u64,
        off: usize,
        len: usize,
    ) -> std::result::Result<(), VerbsFailure> {
        self.q.post_send(wr_id, off, len)
    }
    pub(super) fn post_write(
        &mut self,
        wr_id: u64,
        off: usize,
        len: usize,
        raddr: u64,
        rkey: u32,
    ) -> std::result::Result<(), VerbsFailure> {
        self.q.post_write(wr_id, off, len, raddr, rkey)
    }
    pub(super) fn write_local(&mut self, off: usize, data: &[u8]) {
        self.q.write_local(off, data)
    }
    pub(super) fn read_local(&self, off: usize, len: usize) -> Vec<u8> {
        self.q.read_local(off, len)
    }
    /// The next completion: a stashed one first, else one from the device.
    fn poll(
        &mut self,
        want: &HashSet<u64>,
    ) -> std::result::Result<Option<Completion>, VerbsFailure> {
        if let Some(i) = self.stash.iter().position(|c| want.contains(&c.wr_id)) {
            return Ok(Some(self.stash.remove(i)));
        }
        loop {
            match self.q.poll()? {
                Some(c) if c.status == 0 && !want.contains(&c.wr_id) => {
                    if self.stash.len() < 4096 {
                        self.stash.push(c);
                    }
                }
                other => return Ok(other),
            }
        }
    }
}

/// A completion with an error status, as the failure of `stage`.
fn failed_completion(stage: Stage, c: &Completion) -> Fail {
    Fail::new(
        stage,
        FailureValue::Completion {
            status: c.status,
            name: wc_status_name(c.status),
            vendor_err: c.vendor_err,
        },
    )
}

/// How often an idle wait looks for the peer's Abort on the TCP channel (a
/// few system calls, so not on every poll).
const PEER_CHECK: Duration = Duration::from_millis(5);

/// How a completion wait idles while the queue is empty: spin at first, then
/// sleep 50 us between polls. The deadline is checked on the clock after every
/// empty poll, not after a count of them: on a loaded machine a 50 us sleep
/// (or the poll itself) can last far longer, and a count of polls would then
/// stretch the bound by as much. The peer's Abort is looked for every
/// [`PEER_CHECK`] by the same clock.
struct Idle {
    /// When the wait began (for the timeout's `waited_ms`).
    t0: Instant,
    /// Empty polls since the last completion.
    spins: u32,
    /// When to look for the peer's Abort next.
    peer_check: Instant,
}

impl Idle {
    fn new() -> Idle {
        let t0 = Instant::now();
        Idle {
            t0,
            spins: 0,
            peer_check: t0 + PEER_CHECK,
        }
    }

    /// A completion arrived: spin again before sleeping.
    fn reset(&mut self) {
        self.spins = 0;
    }

    /// One empty poll.
    fn empty_poll(
        &mut self,
        ch: &mut Channel,
        deadline: Instant,
        stage: Stage,
    ) -> std::result::Result<(), Fail> {
        // One monotonic clock read (vDSO) per empty poll: cheap next to the
        // poll, and the only way the bound holds whatever a poll or a sleep
        // really took.
        let now = Instant::now();
        if now >= deadline {
            return Err(Fail::new(
                stage,
                FailureValue::Timeout {
                    waited_ms: now.duration_since(self.t0).as_millis() as u64,
                },
            ));
        }
        if now >= self.peer_check {
            self.peer_check = now + PEER_CHECK;
            if let Some(m) = ch.try_recv() {
                return Err(peer_stop(stage, m));
            }
        }
        self.spins = self.spins.saturating_add(1);
        if self.spins > 4096 {
            std::thread::sleep(Duration::from_micros(50));
        } else {
            std::hint::spin_loop();
        }
        Ok(())
    }
}

/// How long a [`wait`] waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Until {
    /// Every completion in `want`.
    All,
    /// The first of them (its id leaves `want`).
    Any,
}

/// Wait for the completions in `want` (each leaves it as it arrives), failing
/// on an error completion, on the deadline, or on an Abort from the peer;
/// the completions that arrived, in order.
pub(super) fn wait(
    q: &mut Qp<'_>,
    ch: &mut Channel,
    want: &mut HashSet<u64>,
    until: Until,
    deadline: Instant,
    stage: Stage,
) -> std::result::Result<Vec<Completion>, Fail> {
    let mut idle = Idle::new();
    let mut got = Vec::new();
    while !want.is_empty() {
        match q.poll(want).map_err(|e| Fail::verbs(stage, e))? {
            Some(c) => {
                idle.reset();
                if c.status != 0 {
                    return Err(failed_completion(stage, &c));
                }
                want.remove(&c.wr_id);
                got.push(c);
                if until == Until::Any {
                    break;
                }
            }
            None => idle.empty_poll(ch, deadline, stage)?,
        }
    }
    Ok(got)
}

#[cfg(test)]
mod tests {
    //! The wait's bound on a machine where every poll is slow: it must end on
    //! the clock, not after a count of polls.
    use super::super::transfer::tests::Memory;
    use super::*;
    use crate::probe::rdma::tests::within;
    use crate::probe::rdma::wire::Msg;
    use roce_net_testkit::hang_guard;
    use std::net::{TcpListener, TcpStream};

    /// Each poll of the queue takes this long: far more than the 50 us sleep
    /// the wait expects, as on a loaded machine.
    const SLOW_POLL: Duration = Duration::from_millis(3);

    /// Wait `bound` for a completion that never comes on a queue whose every
    /// poll is slow, after the peer sent `from_peer` (or nothing, holding the
    /// connection open): why the wait stopped and how many polls it made.
    fn slow_wait(bound: Duration, from_peer: Option<Msg>) -> (Stage, FailureValue, u32) {
        let (r, _) = within(hang_guard(bound), move || {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let mut peer =
                Channel::new(TcpStream::connect(l.local_addr().unwrap()).unwrap()).unwrap();
            let mut ch = Channel::new(l.accept().unwrap().0).unwrap();
            let deadline = Instant::now() + bound;
            if let Some(m) = from_peer {
                peer.send(&m, deadline).unwrap();
            }
            let mut mem = Memory::new(vec![0; 64]);
            mem.poll_takes = SLOW_POLL;
            let mut q = Qp {
                q: &mut mem,
                stash: Vec::new(),
            };
            let mut want = HashSet::from([1u64]);
            let r = wait(
                &mut q,
                &mut ch,
                &mut want,
                Until::All,
                deadline,
                Stage::SendRecv,
            );
            drop(peer);
            match r {
                Ok(got) => panic!("nothing completes, yet the wait returned {got:?}"),
                Err(f) => (f.stage, f.value, mem.polls),
            }
        });
        r
    }

    #[test]
    fn a_wait_ends_at_its_deadline_however_long_each_poll_takes() {
        let (stage, value, polls) = slow_wait(Duration::from_millis(30), None);
        assert_eq!(stage, Stage::SendRecv);
        assert!(matches!(value, FailureValue::Timeout { .. }), "{value:?}");
        // A wait that read the clock only every 1 024 empty polls would have
        // polled 1 024 times (over 3 s here) before seeing its 30 ms deadline.
        assert!(
            polls < 1024,
            "the deadline was seen only after {polls} polls"
        );
    }

    #[test]
    fn a_peers_abort_ends_a_wait_however_long_each_poll_takes() {
        let abort = Msg::Abort {
            stage: Stage::WriteToPeer,
            value: FailureValue::Other {
                message: "stopped".into(),
            },
            message: "the peer gave up".into(),
        };
        let (stage, value, polls) = slow_wait(Duration::from_secs(5), Some(abort));
        assert_eq!(stage, Stage::Peer, "{value:?}");
        assert!(matches!(value, FailureValue::Other { ref message } if message == "stopped"));
        assert!(polls < 1024, "the Abort was seen only after {polls} polls");
    }
}
