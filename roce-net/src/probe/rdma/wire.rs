//! The TCP exchange between the two ends: one JSON object per line, each at most
//! [`MAX_LINE`] bytes, every read and write bounded by the session's deadline.
//!
//! ```text
//! client                                server
//!   Greeting{nonce}          ───────────▶                         (nothing identifying)
//!                            ◀───────────  Challenge{nonce, proof} (or Abort)
//!   (checks the server's proof of the token)
//!   Hello{endpoint, params, proof} ─────▶
//!                            (checks the client's proof and params; only now a client)
//!                            ◀───────────  Hello{endpoint}        (or Abort)
//!   (both: QP to RTR and RTS, post receives)
//!   Ready                    ◀──────────▶  Ready                  (or Abort)
//!   send/recv ping-pong over the QP, client first
//!   RDMA writes to the server; WriteDone ─▶  checks its buffer
//!                            ◀───────────  Verified
//!                            ◀───────────  RDMA writes; WriteDone
//!   checks its buffer; Verified ────────▶
//!   Result{report}           ───────────▶
//! ```
//!
//! Neither end sends what identifies it (host name, interface names and MACs,
//! GID, the buffer's address and rkey) before the other proved the shared
//! token (`token.rs`; without one, before it spoke this protocol). Text a peer
//! sends (names, messages) is made one terminal-safe line as it is read, so
//! it cannot forge lines of a report.
//!
//! perftest exchanges the same facts (LID, QPN, PSN, rkey, address, GID) as a
//! fixed-format text line; JSON keeps the version, the MTU and the facts the
//! failure analysis needs (the peer's MAC and its other NICs' MACs) extensible.

use super::{FailureValue, Stage};
use crate::model::PortState;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{IpAddr, Ipv6Addr, TcpStream};
use std::time::{Duration, Instant};

/// The protocol's name, the first field of a greeting and a challenge.
pub const PROTO: &str = "roce-net-rdma-probe";
/// The protocol version this build speaks. Version 1 (before the token and
/// the greeting) sent each end's facts first.
pub const VERSION: u32 = 2;
/// Longest message line.
pub const MAX_LINE: usize = 64 * 1024;

/// One end's facts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Endpoint {
    pub host: String,
    pub device: String,
    pub port: u32,
    pub gid_index: u32,
    pub gid: Ipv6Addr,
    pub address: IpAddr,
    pub netdev: Option<String>,
    pub mac: Option<String>,
    /// MAC of every interface of the host, by name (to tell whose MAC a wrong
    /// neighbour entry holds).
    pub nic_macs: BTreeMap<String, String>,
    pub active_mtu: Option<u32>,
    pub port_state: Option<PortState>,
    pub lid: u16,
    pub qpn: u32,
    pub psn: u32,
    pub rkey: u32,
    pub addr: u64,
    pub len: u64,
}

/// What the client asks the server to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Params {
    pub latency_size: usize,
    pub latency_iterations: u32,
    pub write_size: usize,
    pub write_iterations: u32,
    pub mtu: Option<u32>,
    /// The client's limit, so the server waits no longer.
    pub timeout_ms: u64,
}

/// The messages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "msg")]
pub enum Msg {
    /// The client's first message: the protocol and a fresh nonce, nothing
    /// that identifies it.
    Greeting {
        proto: String,
        version: u32,
        nonce: String,
    },
    /// The server's answer to a greeting: its own nonce and its proof of the
    /// token over both nonces.
    Challenge {
        proto: String,
        version: u32,
        nonce: String,
        proof: String,
    },
    /// One end's facts: the client's with its parameters and its proof of the
    /// token, once the server proved it; the server's once the client did.
    Hello {
        endpoint: Box<Endpoint>,
        params: Option<Params>,
        proof: Option<String>,
    },
    Ready,
    WriteDone {
        /// Seed of the pattern written.
        seed: u64,
        /// Bytes of the last write (at offset 0 of the peer's buffer).
        len: usize,
        /// Writer's measurement.
        seconds: f64,
        bytes: u64,
    },
    Verified {
        ok: bool,
        detail: String,
    },
    Result {
        report: Box<serde_json::Value>,
    },
    Abort {
        stage: Stage,
        value: FailureValue,
        message: String,
    },
}

/// Text from the peer as one line a terminal shows and never obeys.
fn line(s: &str) -> String {
    crate::input::terminal_safe_line(s)
}

impl FailureValue {
    /// The value as the peer sent it, its texts made [`line`]s.
    fn sanitized(self) -> FailureValue {
        match self {
            FailureValue::Errno { errno, name } => FailureValue::Errno {
                errno,
                name: line(&name),
            },
            FailureValue::Completion {
                status,
                name,
                vendor_err,
            } => FailureValue::Completion {
                status,
                name: line(&name),
                vendor_err,
            },
            FailureValue::Other { message } => FailureValue::Other {
                message: line(&message),
            },
            v @ FailureValue::Timeout { .. } => v,
        }
    }
}

/// Longest host name a peer may send (a fully qualified name has at most 253).
const MAX_HOST: usize = 255;
/// Longest RDMA device name (`IB_DEVICE_NAME_MAX`, 64, with its NUL).
const MAX_DEVICE: usize = 63;
/// Longest interface name (`IFNAMSIZ`, 16, with its NUL).
const MAX_IFNAME: usize = 15;
/// Most interfaces whose MACs an end sends.
pub(crate) const MAX_NIC_MACS: usize = 4096;

impl Endpoint {
    /// Whether the facts a peer sent are well formed: names no longer than
    /// the kernel allows, MACs that are MACs, at most [`MAX_NIC_MACS`]
    /// interfaces. What is wrong, when something is.
    pub(crate) fn check(&self) -> Result<(), String> {
        let name = |what: &str, s: &str, max: usize| {
            if s.is_empty() || s.len() > max {
                Err(format!("{what} of {} bytes (1 to {max})", s.len()))
            } else {
                Ok(())
            }
        };
        let mac = |what: &str, s: &str| match s.parse::<crate::model::HwAddr>() {
            Ok(m) if !m.0.is_empty() && m.0.len() <= 32 => Ok(()),
            _ => Err(format!("{what} {} is not a MAC address", line(s))),
        };
        name("a host name", &self.host, MAX_HOST)?;
        name("a device name", &self.device, MAX_DEVICE)?;
        if let Some(n) = &self.netdev {
            name("an interface name", n, MAX_IFNAME)?;
        }
        if let Some(m) = &self.mac {
            mac("the MAC", m)?;
        }
        if self.nic_macs.len() > MAX_NIC_MACS {
            return Err(format!(
                "{} interfaces' MACs (at most {MAX_NIC_MACS})",
                self.nic_macs.len()
            ));
        }
        for (k, v) in &self.nic_macs {
            name("an interface name", k, MAX_IFNAME)?;
            mac("an interface's MAC", v)?;
        }
        Ok(())
    }

    /// The facts as the peer sent them, every name made a [`line`].
    fn sanitized(self) -> Endpoint {
        Endpoint {
            host: line(&self.host),
            device: line(&self.device),
            netdev: self.netdev.as_deref().map(line),
            mac: self.mac.as_deref().map(line),
            nic_macs: self
                .nic_macs
                .iter()
                .map(|(k, v)| (line(k), line(v)))
                .collect(),
            ..self
        }
    }
}

impl Msg {
    /// What kind of message it is, for errors (never its content).
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Msg::Greeting { .. } => "a greeting",
            Msg::Challenge { .. } => "a challenge",
            Msg::Hello { .. } => "a hello",
            Msg::Ready => "ready",
            Msg::WriteDone { .. } => "write-done",
            Msg::Verified { .. } => "verified",
            Msg::Result { .. } => "a result",
            Msg::Abort { .. } => "an abort",
        }
    }

    /// The message as the peer sent it, every text in it made a [`line`]: a
    /// host name or an abort message cannot start a line of a report.
    fn sanitized(self) -> Msg {
        match self {
            Msg::Greeting {
                proto,
                version,
                nonce,
            } => Msg::Greeting {
                proto: line(&proto),
                version,
                nonce: line(&nonce),
            },
            Msg::Challenge {
                proto,
                version,
                nonce,
                proof,
            } => Msg::Challenge {
                proto: line(&proto),
                version,
                nonce: line(&nonce),
                proof: line(&proof),
            },
            Msg::Hello {
                endpoint,
                params,
                proof,
            } => Msg::Hello {
                endpoint: Box::new(endpoint.sanitized()),
                params,
                proof: proof.as_deref().map(line),
            },
            Msg::Verified { ok, detail } => Msg::Verified {
                ok,
                detail: line(&detail),
            },
            Msg::Abort {
                stage,
                value,
                message,
            } => Msg::Abort {
                stage,
                value: value.sanitized(),
                message: line(&message),
            },
            m @ (Msg::Ready | Msg::WriteDone { .. } | Msg::Result { .. }) => m,
        }
    }
}

/// A failure of the exchange itself.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct WireError {
    pub value: FailureValue,
    /// The peer closed the connection (rather than a timeout or garbage).
    pub closed: bool,
}

impl WireError {
    fn io(e: &std::io::Error, waited: Duration) -> WireError {
        use std::io::ErrorKind as K;
        WireError {
            closed: matches!(
                e.kind(),
                K::ConnectionReset | K::BrokenPipe | K::ConnectionAborted
            ),
            value: match e.kind() {
                K::WouldBlock | K::TimedOut => FailureValue::Timeout {
                    waited_ms: waited.as_millis() as u64,
                },
                _ => match e.raw_os_error() {
                    Some(n) => FailureValue::Errno {
                        errno: n,
                        name: super::status::errno_name(n),
                    },
                    None => FailureValue::Other {
                        message: e.to_string(),
                    },
                },
            },
        }
    }
    pub(crate) fn other(m: impl Into<String>) -> WireError {
        WireError {
            value: FailureValue::Other { message: m.into() },
            closed: false,
        }
    }
    fn closed(m: &str) -> WireError {
        WireError {
            value: FailureValue::Other {
                message: m.to_string(),
            },
            closed: true,
        }
    }
}

/// A message channel over a TCP stream, bounded by deadlines.
pub(crate) struct Channel {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    /// When the exchange began: a timeout reports the time since then, so a
    /// wait that found the probe's bound already spent does not read as "no
    /// answer within 0 ms".
    started: Instant,
    /// A message [`Channel::try_recv`] read while this end still waited on its
    /// device, kept for the next [`Channel::recv`]: the peer may be a step
    /// ahead (it saw our data arrive before our own completion was polled).
    pending: Option<Msg>,
}

fn remaining(deadline: Instant) -> Option<Duration> {
    deadline
        .checked_duration_since(Instant::now())
        .filter(|d| !d.is_zero())
}

impl Channel {
    pub(crate) fn new(s: TcpStream) -> std::io::Result<Channel> {
        s.set_nodelay(true)?;
        Ok(Channel {
            reader: BufReader::new(s.try_clone()?),
            writer: s,
            started: Instant::now(),
            pending: None,
        })
    }

    /// The probe's bound ran out: the time since the exchange began.
    fn timed_out(&self) -> WireError {
        WireError {
            closed: false,
            value: FailureValue::Timeout {
                waited_ms: self.started.elapsed().as_millis() as u64,
            },
        }
    }

    /// Send `m` by `deadline`. The deadline bounds the whole send, not each
    /// write: a peer that reads a few bytes at a time cannot stretch it.
    pub(crate) fn send(&mut self, m: &Msg, deadline: Instant) -> Result<(), WireError> {
        let mut line = serde_json::to_vec(m).map_err(|e| WireError::other(e.to_string()))?;
        if line.len() > MAX_LINE {
            return Err(WireError::other(format!(
                "message of {} bytes exceeds the protocol's {MAX_LINE}",
                line.len()
            )));
        }
        line.push(b'\n');
        let mut sent = 0;
        while sent < line.len() {
            let left = remaining(deadline).ok_or_else(|| self.timed_out())?;
            self.writer
                .set_write_timeout(Some(left))
                .map_err(|e| WireError::io(&e, self.started.elapsed()))?;
            match self.writer.write(&line[sent..]) {
                Ok(0) => {
                    return Err(WireError::closed(
                        "the peer closed the connection while this end was sending",
                    ))
                }
                Ok(n) => sent += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(WireError::io(&e, self.started.elapsed())),
            }
        }
        Ok(())
    }

    /// An Abort (or a closed or broken connection) if the peer sent one while
    /// we wait on the device; `None` when nothing is waiting. Any other message
    /// is the peer one step ahead of this end — its next message, sent once it
    /// saw our data arrive, which can be before our own completion for it is
    /// polled — and is kept for the next [`Channel::recv`], not taken as the
    /// peer stopping. Never blocks longer than a short grace.
    pub(crate) fn try_recv(&mut self) -> Option<Result<Msg, WireError>> {
        if self.pending.is_some() {
            return None;
        }
        if self.reader.buffer().is_empty() {
            let s = self.reader.get_ref();
            if s.set_nonblocking(true).is_err() {
                return None;
            }
            let mut b = [0u8; 1];
            let r = s.peek(&mut b);
            let _ = s.set_nonblocking(false);
            match r {
                Ok(0) => {
                    return Some(Err(WireError::closed(
                        "the peer closed the connection during the test",
                    )))
                }
                Ok(_) => {}
                Err(_) => return None,
            }
        }
        match self.recv(Instant::now() + Duration::from_millis(500)) {
            Ok(m) if !matches!(m, Msg::Abort { .. }) => {
                self.pending = Some(m);
                None
            }
            r => Some(r),
        }
    }

    /// The next message; a timeout, a closed connection, an oversized or
    /// malformed line are errors. The deadline bounds the whole receive, not
    /// each read: a peer that trickles a line a byte at a time, each just
    /// inside any per-read timeout, still ends it at `deadline`.
    pub(crate) fn recv(&mut self, deadline: Instant) -> Result<Msg, WireError> {
        if let Some(m) = self.pending.take() {
            return Ok(m);
        }
        let mut buf = Vec::new();
        loop {
            let left = remaining(deadline).ok_or_else(|| self.timed_out())?;
            self.reader
                .get_ref()
                .set_read_timeout(Some(left))
                .map_err(|e| WireError::io(&e, self.started.elapsed()))?;
            // One read at most (fill_buf reads only when its buffer is empty),
            // then the deadline again.
            let got = match self.reader.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(WireError::io(&e, self.started.elapsed())),
            };
            if got.is_empty() {
                return Err(WireError::closed(
                    "the peer closed the connection before answering",
                ));
            }
            let room = MAX_LINE + 1 - buf.len();
            let (take, done) = match got.iter().position(|b| *b == b'\n') {
                Some(i) if i < room => (i + 1, true),
                _ => (got.len().min(room), false),
            };
            buf.extend_from_slice(&got[..take]);
            self.reader.consume(take);
            if done {
                break;
            }
            if buf.len() > MAX_LINE {
                return Err(WireError::other(format!(
                    "the peer sent a line longer than {MAX_LINE} bytes: not a roce-net probe"
                )));
            }
        }
        serde_json::from_slice::<Msg>(&buf)
            .map(Msg::sanitized)
            .map_err(|e| {
                WireError::other(format!(
                    "the peer sent something that is not a roce-net probe message ({}): {}",
                    line(&e.to_string()),
                    crate::input::excerpt_bytes(&buf, 80)
                ))
            })
    }
}

/// The byte pattern of a write: a function of the seed and the offset, so the
/// receiver checks it without being sent the data.
pub(crate) fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed | 1;
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        // xorshift64
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(len);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::TcpListener;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    fn pair() -> (Channel, Channel) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (b, _) = l.accept().unwrap();
        (Channel::new(a).unwrap(), Channel::new(b).unwrap())
    }

    fn soon(ms: u64) -> Instant {
        Instant::now() + Duration::from_millis(ms)
    }

    #[test]
    fn messages_round_trip() {
        let (mut a, mut b) = pair();
        let m = Msg::WriteDone {
            seed: 7,
            len: 100,
            seconds: 0.5,
            bytes: 1000,
        };
        a.send(&m, soon(1000)).unwrap();
        a.send(&Msg::Ready, soon(1000)).unwrap();
        assert_eq!(b.recv(soon(1000)).unwrap(), m);
        assert_eq!(b.recv(soon(1000)).unwrap(), Msg::Ready);
    }

    #[test]
    fn a_silent_peer_is_a_timeout_within_the_deadline() {
        let (_a, mut b) = pair();
        let bound = Duration::from_millis(200);
        let deadline = Instant::now() + bound;
        // Not before the deadline (a slow machine only makes it later), and
        // a hang guard over it: a silent peer never ends a receive itself.
        let (e, took) =
            crate::probe::rdma::tests::within(roce_net_testkit::hang_guard(bound), move || {
                b.recv(deadline).unwrap_err()
            });
        assert!(matches!(e.value, FailureValue::Timeout { .. }), "{e:?}");
        assert!(took >= Duration::from_millis(150), "{took:?}");
    }

    #[test]
    fn a_timeout_counts_from_the_start_of_the_exchange() {
        // The bound ran out before this wait began: the failure says how long
        // the exchange waited in all, not the ~0 ms of this last call.
        let (_a, mut b) = pair();
        let deadline = soon(100);
        std::thread::sleep(Duration::from_millis(150));
        let e = b.recv(deadline).unwrap_err();
        match e.value {
            FailureValue::Timeout { waited_ms } => assert!(waited_ms >= 150, "{waited_ms}"),
            v => panic!("{v:?}"),
        }
    }

    #[test]
    fn garbage_and_oversized_lines_are_refused() {
        let (a, mut b) = pair();
        let mut w = a.writer.try_clone().unwrap();
        w.write_all(b"GET / HTTP/1.0\n").unwrap();
        let e = b.recv(soon(1000)).unwrap_err();
        assert!(
            format!("{:?}", e.value).contains("not a roce-net probe message"),
            "{e:?}"
        );
        let big = vec![b'x'; MAX_LINE + 10];
        w.write_all(&big).unwrap();
        let e = b.recv(soon(2000)).unwrap_err();
        assert!(format!("{:?}", e.value).contains("longer than"), "{e:?}");
    }

    /// A peer that sends a line one byte at a time, each byte well within any
    /// per-read timeout, never its newline: the deadline bounds the whole
    /// receive, not each read.
    #[test]
    fn a_peer_that_trickles_a_line_is_a_timeout_at_the_deadline() {
        let (a, mut b) = pair();
        let mut w = a.writer.try_clone().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let trickler = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                // At most 60 s: past the hang guard below, so a receive that
                // waited for the trickler hits the guard, and one that never
                // stops cannot hold the test binary for ever.
                for _ in 0..1200 {
                    if stop.load(Ordering::Relaxed) || w.write_all(b"x").is_err() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
            })
        };
        let bound = Duration::from_millis(300);
        let deadline = Instant::now() + bound;
        let (e, _) =
            crate::probe::rdma::tests::within(roce_net_testkit::hang_guard(bound), move || {
                b.recv(deadline).unwrap_err()
            });
        stop.store(true, Ordering::Relaxed);
        trickler.join().unwrap();
        assert!(matches!(e.value, FailureValue::Timeout { .. }), "{e:?}");
    }

    /// A peer that reads a long message a few bytes at a time, so each write
    /// makes a little progress within any per-write timeout: the deadline
    /// bounds the whole send.
    #[test]
    fn a_peer_that_reads_slowly_is_a_timeout_at_the_deadline() {
        let (mut a, mut r) = small_buffer_pair();
        let stop = Arc::new(AtomicBool::new(false));
        let reader = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut chunk = [0u8; 256];
                for _ in 0..500 {
                    if stop.load(Ordering::Relaxed) || matches!(r.read(&mut chunk), Ok(0) | Err(_))
                    {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
            })
        };
        let long = Msg::Verified {
            ok: false,
            detail: "x".repeat(60_000),
        };
        // The reader takes the whole message within its 500 reads: a send
        // that outlived its deadline would succeed (or, once the reader is
        // gone, fail with a broken pipe), not time out.
        let e = a.send(&long, soon(300));
        stop.store(true, Ordering::Relaxed);
        drop(a);
        reader.join().unwrap();
        let e = e.unwrap_err();
        assert!(matches!(e.value, FailureValue::Timeout { .. }), "{e:?}");
    }

    /// A channel and the raw stream of its peer, over loopback with the
    /// kernel's smallest buffers and segments (set before the connection, so
    /// the receive window stays small): a message of a few kilobytes does not
    /// fit in the buffers on the way.
    fn small_buffer_pair() -> (Channel, TcpStream) {
        use crate::sys::{setsockopt, sockaddr};
        use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
        let sock = || {
            // SAFETY: plain socket(2); owned right away.
            let fd =
                unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
            assert!(fd >= 0, "{}", std::io::Error::last_os_error());
            // SAFETY: fd is fresh and ours.
            let fd = unsafe { OwnedFd::from_raw_fd(fd) };
            // The kernel raises each to its minimum.
            setsockopt(&fd, libc::SOL_SOCKET, libc::SO_RCVBUF, 1).unwrap();
            setsockopt(&fd, libc::SOL_SOCKET, libc::SO_SNDBUF, 1).unwrap();
            setsockopt(&fd, libc::IPPROTO_TCP, libc::TCP_MAXSEG, 536).unwrap();
            fd
        };
        let (addr, len) = sockaddr((std::net::Ipv4Addr::LOCALHOST, 0).into());
        let lfd = sock();
        // SAFETY: a valid socket and address.
        assert_eq!(
            unsafe { libc::bind(lfd.as_raw_fd(), std::ptr::addr_of!(addr).cast(), len) },
            0
        );
        // SAFETY: a bound socket.
        assert_eq!(unsafe { libc::listen(lfd.as_raw_fd(), 1) }, 0);
        let l = TcpListener::from(lfd);
        let (to, len) = sockaddr(l.local_addr().unwrap());
        let cfd = sock();
        // SAFETY: a valid socket and address.
        assert_eq!(
            unsafe { libc::connect(cfd.as_raw_fd(), std::ptr::addr_of!(to).cast(), len) },
            0
        );
        let c = TcpStream::from(cfd);
        (Channel::new(c).unwrap(), l.accept().unwrap().0)
    }

    #[test]
    fn a_closed_peer_is_reported() {
        let (a, mut b) = pair();
        drop(a);
        let e = b.recv(soon(1000)).unwrap_err();
        assert!(
            format!("{:?}", e.value).contains("closed the connection"),
            "{e:?}"
        );
    }

    /// While one end waits on its device it polls the channel for an Abort.
    /// The peer may already be a step ahead — it saw our echo arrive and sent
    /// its next message before our own send completion was polled — and that
    /// message must reach the next `recv`, not end the session as "unexpected
    /// message from the peer" (it did, in about one of three runs of a
    /// two-client probe over the lab).
    #[test]
    fn a_message_a_step_ahead_is_kept_for_recv_and_an_abort_is_not() {
        let (mut a, mut b) = pair();
        a.send(&Msg::Ready, soon(1000)).unwrap();
        let t0 = Instant::now();
        let mut seen = None;
        while t0.elapsed() < Duration::from_secs(5) && seen.is_none() {
            seen = b.try_recv();
            if b.pending.is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(seen.is_none(), "{:?}", seen.map(|r| r.map(|m| m.name())));
        assert!(b.try_recv().is_none());
        assert_eq!(b.recv(soon(1000)).unwrap().name(), Msg::Ready.name());
        let abort = Msg::Abort {
            stage: Stage::SendRecv,
            value: FailureValue::Other {
                message: "x".into(),
            },
            message: "the client failed".into(),
        };
        a.send(&abort, soon(1000)).unwrap();
        let t0 = Instant::now();
        let got = loop {
            if let Some(r) = b.try_recv() {
                break r;
            }
            assert!(t0.elapsed() < Duration::from_secs(5), "no abort seen");
            std::thread::sleep(Duration::from_millis(5));
        };
        assert_eq!(got.unwrap().name(), "an abort");
    }

    #[test]
    fn pattern_depends_on_seed_and_is_reproducible() {
        assert_eq!(pattern(3, 1000), pattern(3, 1000));
        assert_ne!(pattern(3, 1000), pattern(4, 1000));
        assert_eq!(pattern(3, 13).len(), 13);
    }
}
