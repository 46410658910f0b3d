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

/// How a completion wait idles while the queue is empty: spin at first, then
/// sleep 50 us between polls; every 1 024 empty polls, fail on the deadline or
/// on the peer's Abort.
struct Idle {
    /// When the wait began (for the timeout's `waited_ms`).
    t0: Instant,
    /// Empty polls since the last completion.
    spins: u32,
}

impl Idle {
    fn new() -> Idle {
        Idle {
            t0: Instant::now(),
            spins: 0,
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
        self.spins += 1;
        if self.spins % 1024 == 0 {
            if Instant::now() >= deadline {
                return Err(Fail::new(
                    stage,
                    FailureValue::Timeout {
                        waited_ms: self.t0.elapsed().as_millis() as u64,
                    },
                ));
            }
            if let Some(m) = ch.try_recv() {
                return Err(peer_stop(stage, m));
            }
        }
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
