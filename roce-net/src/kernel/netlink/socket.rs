//! The blocking request/dump engine under [`super::Netlink`] (docs/architecture.md, decision 2).
//!
//! One rtnetlink socket, one outstanding request at a time. Every request carries a
//! fresh sequence number and replies are matched on it (and on our port id), so a
//! leftover from an earlier, abandoned exchange can never be taken for an answer.
//! The socket asks for extended acks (`NETLINK_EXT_ACK`, the kernel's error text is
//! kept in [`Error::extack`]), capped acks, and strict checking of dump requests
//! (`NETLINK_GET_STRICT_CHK`). A dump whose messages carry `NLM_F_DUMP_INTR` (the
//! table changed while it was being walked) is run again, at most
//! [`MAX_DUMP_ATTEMPTS`] times.
//!
//! The netlink crate types stay inside this module tree: the public surface is
//! [`super::Netlink`] with methods over `roce_net::model` types.

use crate::error::{Error, ErrorKind, Result};
use netlink_packet_core::{
    NetlinkHeader, NetlinkMessage, NetlinkPayload, ParseableParametrized, NLM_F_ACK, NLM_F_DUMP,
    NLM_F_DUMP_INTR, NLM_F_REQUEST,
};
use netlink_packet_route::RouteNetlinkMessage;
use std::mem::MaybeUninit;
use std::os::fd::AsRawFd;

/// How many times a dump interrupted by a concurrent change is attempted.
pub(crate) const MAX_DUMP_ATTEMPTS: usize = 5;
/// `SO_RCVBUF` asked for (the kernel doubles it, capped by `rmem_max` unless root).
const RCVBUF: usize = 1 << 20;
/// Initial receive buffer; grown when a datagram is larger. The kernel's dump
/// datagrams are at most 32 KiB unless a single message is larger (a link with
/// hundreds of VFs, when asked for them), and acks are capped.
const RECV_BUF: usize = 64 * 1024;
/// The most the receive buffer grows to: a larger datagram is refused.
const MAX_RECV_BUF: usize = 16 << 20;
/// Datagrams read and dropped at most while draining an abandoned exchange.
const MAX_DRAIN: usize = 1 << 20;
/// Receive timeout: a kernel that does not answer in this time is reported.
const RECV_TIMEOUT_SECS: i64 = 30;

const NLMSG_HDRLEN: usize = 16;
const NLMSG_NOOP: u16 = 1;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLMSG_OVERRUN: u16 = 4;
const NLM_F_CAPPED: u16 = 0x100;
const NLM_F_ACK_TLVS: u16 = 0x200;
const NLMSGERR_ATTR_MSG: u16 = 1;

/// Where datagrams go to and come from: the kernel, or a script in unit tests.
pub(crate) trait Transport {
    /// Send one request datagram.
    fn send(&mut self, data: &[u8]) -> std::io::Result<()>;
    /// Receive one datagram into `buf` and return its full length, which is
    /// more than `buf.len()` when it did not fit (its tail is then lost). With
    /// `wait` false, a socket with nothing queued gives `WouldBlock` at once.
    ///
    /// `buf` may be uninitialised; on `Ok(n)` an implementation must have written
    /// the first `min(n, buf.len())` bytes (the engine reads exactly those).
    fn recv(&mut self, buf: &mut [MaybeUninit<u8>], wait: bool) -> std::io::Result<usize>;
    /// Our port id, as the kernel addresses replies to us.
    fn port(&self) -> u32;
}

#[cfg(test)]
thread_local! {
    /// Test seam: when `Some`, every datagram this thread receives from the
    /// kernel is also kept here (the fuzz corpus test captures real dumps).
    pub(crate) static RECORDED: std::cell::RefCell<Option<Vec<Vec<u8>>>> =
        const { std::cell::RefCell::new(None) };
}

/// A `NETLINK_ROUTE` socket in the namespace of the thread that opened it.
pub(crate) struct KernelTransport {
    sock: netlink_sys::Socket,
    port: u32,
}

impl KernelTransport {
    pub(crate) fn open() -> Result<KernelTransport> {
        let doing = "opening a NETLINK_ROUTE socket";
        let mut sock = netlink_sys::Socket::new(netlink_sys::protocols::NETLINK_ROUTE)
            .map_err(|e| Error::io(e, doing))?;
        let addr = sock.bind_auto().map_err(|e| Error::io(e, doing))?;
        // Best effort: an unprivileged caller is capped by rmem_max, which still works.
        let _ = sock.set_rx_buf_sz(RCVBUF);
        sock.set_ext_ack(true)
            .map_err(|e| Error::io(e, "enabling NETLINK_EXT_ACK on the netlink socket"))?;
        // Capped acks keep error replies small; older kernels lack it, which is fine.
        let _ = sock.set_cap_ack(true);
        sock.set_netlink_get_strict_chk(true).map_err(|e| {
            Error::io(e, "enabling NETLINK_GET_STRICT_CHK on the netlink socket")
                .context("this kernel is older than 4.20; roce-net needs strict netlink checking")
        })?;
        let tv = libc::timeval {
            tv_sec: RECV_TIMEOUT_SECS,
            tv_usec: 0,
        };
        crate::sys::setsockopt(&sock, libc::SOL_SOCKET, libc::SO_RCVTIMEO, tv)
            .map_err(|e| Error::io(e, "setting a receive timeout on the netlink socket"))?;
        Ok(KernelTransport {
            port: addr.port_number(),
            sock,
        })
    }
}

impl Transport for KernelTransport {
    fn send(&mut self, data: &[u8]) -> std::io::Result<()> {
        let kernel = netlink_sys::SocketAddr::new(0, 0);
        let n = self.sock.send_to(data, &kernel, 0)?;
        if n != data.len() {
            return Err(std::io::Error::other("short write on the netlink socket"));
        }
        Ok(())
    }

    fn recv(&mut self, buf: &mut [MaybeUninit<u8>], wait: bool) -> std::io::Result<usize> {
        let fd = self.sock.as_raw_fd();
        // One read per datagram: MSG_TRUNC makes the kernel return the datagram's
        // real length, so a datagram larger than `buf` is seen (and the exchange
        // run again with a larger buffer: `Engine::collect_raw`) instead of
        // peeking at every datagram's size first, which costs a second read each.
        let flags = libc::MSG_TRUNC | if wait { 0 } else { libc::MSG_DONTWAIT };
        loop {
            // SAFETY: recv writes at most `buf.len()` bytes into a buffer we own
            // (uninitialised bytes may be written to).
            let got = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), flags) };
            if got < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            let got = got as usize;
            #[cfg(test)]
            RECORDED.with(|r| {
                if let Some(v) = r.borrow_mut().as_mut() {
                    // SAFETY: the kernel wrote the first min(got, len) bytes.
                    v.push(unsafe { initialised(buf, got) }.to_vec());
                }
            });
            return Ok(got);
        }
    }

    fn port(&self) -> u32 {
        self.port
    }
}

impl Engine<KernelTransport> {
    /// The netlink socket's descriptor, for the device ioctls of its namespace.
    pub(crate) fn raw_fd(&self) -> std::os::fd::RawFd {
        self.transport.sock.as_raw_fd()
    }
}

/// The request/dump engine over a [`Transport`].
pub(crate) struct Engine<T: Transport> {
    transport: T,
    seq: u32,
    /// The receive buffer: only its capacity is used. It is never zeroed, so a
    /// small reply touches (and faults in) only the pages it fills: zeroing the
    /// 64 KiB up front was 15 of the CLI's ~100 page faults, about 3 us each here.
    buf: Vec<u8>,
    sendbuf: Vec<u8>,
}

/// The first `min(n, buf.len())` bytes of `buf`, which a [`Transport::recv`]
/// that returned `n` has written (for the tests' recorder).
///
/// # Safety
/// Those bytes must have been initialised.
#[cfg(test)]
unsafe fn initialised(buf: &[MaybeUninit<u8>], n: usize) -> &[u8] {
    let n = n.min(buf.len());
    // SAFETY: the caller guarantees the first `n` bytes are initialised, and
    // MaybeUninit<u8> has the layout of u8.
    unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), n) }
}

/// How an exchange ended.
#[derive(Debug, PartialEq, Eq)]
enum Ended {
    /// The kernel's ACK or `NLMSG_DONE` arrived; `interrupted` when a message
    /// carried `NLM_F_DUMP_INTR`.
    Complete { interrupted: bool },
    /// A datagram of `needed` bytes did not fit the `had`-byte buffer. The rest
    /// of the exchange was read and dropped and the buffer has grown, so the
    /// exchange can be run again.
    Truncated { needed: usize, had: usize },
}

/// What a reply datagram told us.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Step {
    /// More datagrams follow.
    More,
    /// The exchange is complete (ACK or `NLMSG_DONE`).
    Finished,
}

impl<T: Transport> Engine<T> {
    pub(crate) fn new(transport: T) -> Engine<T> {
        Self::with_buffer(transport, RECV_BUF)
    }

    /// An engine whose receive buffer starts at `len` bytes.
    fn with_buffer(transport: T, len: usize) -> Engine<T> {
        Engine {
            transport,
            seq: 0,
            buf: Vec::with_capacity(len),
            sendbuf: Vec::new(),
        }
    }

    fn send(&mut self, msg: RouteNetlinkMessage, flags: u16, what: &str) -> Result<u32> {
        self.seq = self.seq.wrapping_add(1).max(1);
        let mut header = NetlinkHeader::default();
        header.flags = NLM_F_REQUEST | flags;
        header.sequence_number = self.seq;
        let mut nl = NetlinkMessage::new(header, NetlinkPayload::InnerMessage(msg));
        nl.finalize();
        log::trace!("{what}: send netlink packet: {nl:?}");
        self.sendbuf.clear();
        self.sendbuf.resize(nl.buffer_len(), 0);
        nl.serialize(&mut self.sendbuf);
        self.transport
            .send(&self.sendbuf)
            .map_err(|e| Error::io(e, format!("{what}: sending the netlink request")))?;
        Ok(self.seq)
    }

    /// Read datagrams until the exchange with sequence `seq` finishes, passing
    /// every inner message's type and payload, undecoded, to `sink`.
    fn collect_raw(
        &mut self,
        seq: u32,
        what: &str,
        sink: &mut dyn FnMut(u16, &[u8]) -> Result<()>,
    ) -> Result<Ended> {
        let mut interrupted = false;
        loop {
            self.buf.clear();
            let n = self
                .transport
                .recv(self.buf.spare_capacity_mut(), true)
                .map_err(|e| {
                    let timeout = matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    );
                    let err = Error::io(e, format!("{what}: reading the kernel's reply"));
                    if timeout {
                        err.with_kind(ErrorKind::Timeout)
                    } else {
                        err
                    }
                })?;
            let room = self.buf.capacity();
            // SAFETY: `recv` wrote the first min(n, capacity) bytes (its contract).
            unsafe { self.buf.set_len(n.min(room)) };
            if n > room {
                return self.truncated(n, what);
            }
            let data = &self.buf[..n];
            let port = self.transport.port();
            if handle_datagram(data, seq, port, what, &mut interrupted, sink)? == Step::Finished {
                return Ok(Ended::Complete { interrupted });
            }
        }
    }

    /// A datagram of `needed` bytes did not fit: read and drop what is left of
    /// the exchange (the kernel refuses a new dump on this socket while one is
    /// running, and queues a dump's next datagram while we read the one before,
    /// so an empty queue means it is over), then grow the buffer for a rerun.
    fn truncated(&mut self, needed: usize, what: &str) -> Result<Ended> {
        let had = self.buf.capacity();
        for _ in 0..MAX_DRAIN {
            self.buf.clear();
            if self
                .transport
                .recv(self.buf.spare_capacity_mut(), false)
                .is_err()
            {
                break;
            }
        }
        if needed > MAX_RECV_BUF {
            return Err(Error::new(
                ErrorKind::Netlink,
                format!(
                    "{what}: the kernel sent a {needed}-byte netlink datagram, more than \
                     roce-net reads ({MAX_RECV_BUF} bytes)"
                ),
            ));
        }
        self.buf.clear();
        self.buf
            .reserve_exact(needed.next_power_of_two().min(MAX_RECV_BUF));
        Ok(Ended::Truncated { needed, had })
    }

    /// The error for a request whose reply was cut short (the buffer has grown
    /// since, so running it again works).
    fn lost_reply(what: &str, needed: usize, had: usize) -> Error {
        Error::new(
            ErrorKind::Netlink,
            format!(
                "{what}: the kernel's reply ({needed} bytes) did not fit the {had}-byte \
                 receive buffer and was lost; the request was sent and may have taken \
                 effect: check, then run it again"
            ),
        )
    }

    /// Send `msg` with `NLM_F_ACK` (plus `flags`, e.g. `NLM_F_CREATE`) and return
    /// the messages the kernel sent before its ACK (e.g. the reply to a route get).
    pub(crate) fn request(
        &mut self,
        msg: RouteNetlinkMessage,
        flags: u16,
        what: &str,
    ) -> Result<Vec<RouteNetlinkMessage>> {
        let mut out = Vec::new();
        self.request_each(msg, flags, what, |mtype, payload| {
            out.push(decode(mtype, payload, what)?);
            Ok(())
        })?;
        Ok(out)
    }

    /// [`Engine::request`], passing each reply's type and payload undecoded to
    /// `f` (for a decoder of our own: `link::decode_link`).
    pub(crate) fn request_each(
        &mut self,
        msg: RouteNetlinkMessage,
        flags: u16,
        what: &str,
        mut f: impl FnMut(u16, &[u8]) -> Result<()>,
    ) -> Result<()> {
        let seq = self.send(msg, NLM_F_ACK | flags, what)?;
        match self.collect_raw(seq, what, &mut f)? {
            Ended::Complete { .. } => Ok(()),
            Ended::Truncated { needed, had } => Err(Self::lost_reply(what, needed, had)),
        }
    }

    /// Send a request the netlink crate has no type for (`mtype`, with `payload`
    /// after the netlink header) with `NLM_F_ACK`, and return the type and payload
    /// of every message the kernel sent before its ACK.
    pub(crate) fn request_raw(
        &mut self,
        mtype: u16,
        payload: &[u8],
        what: &str,
    ) -> Result<Vec<(u16, Vec<u8>)>> {
        self.seq = self.seq.wrapping_add(1).max(1);
        let seq = self.seq;
        let len = NLMSG_HDRLEN + payload.len();
        let len32 = u32::try_from(len).map_err(|_| {
            Error::new(
                ErrorKind::InvalidInput,
                format!("{what}: request too large"),
            )
        })?;
        self.sendbuf.clear();
        self.sendbuf.extend_from_slice(&len32.to_ne_bytes());
        self.sendbuf.extend_from_slice(&mtype.to_ne_bytes());
        self.sendbuf
            .extend_from_slice(&(NLM_F_REQUEST | NLM_F_ACK).to_ne_bytes());
        self.sendbuf.extend_from_slice(&seq.to_ne_bytes());
        self.sendbuf.extend_from_slice(&0u32.to_ne_bytes());
        self.sendbuf.extend_from_slice(payload);
        self.sendbuf.resize(align4(len), 0);
        log::trace!(
            "{what}: send netlink packet: type {mtype} flags {:#x} seq {seq} payload {} bytes",
            NLM_F_REQUEST | NLM_F_ACK,
            payload.len()
        );
        self.transport
            .send(&self.sendbuf)
            .map_err(|e| Error::io(e, format!("{what}: sending the netlink request")))?;
        let mut out = Vec::new();
        let ended = self.collect_raw(seq, what, &mut |t, p| {
            out.push((t, p.to_vec()));
            Ok(())
        })?;
        match ended {
            Ended::Complete { .. } => Ok(out),
            Ended::Truncated { needed, had } => Err(Self::lost_reply(what, needed, had)),
        }
    }

    /// Dump with `msg` and map every reply through `f` (`None` drops it). Retried
    /// from scratch when the kernel flags the dump as interrupted, or when a
    /// datagram did not fit the receive buffer (which has grown since).
    pub(crate) fn dump_map<R>(
        &mut self,
        msg: RouteNetlinkMessage,
        what: &str,
        mut f: impl FnMut(RouteNetlinkMessage) -> Option<R>,
    ) -> Result<Vec<R>> {
        self.dump_raw_map(msg, what, |mtype, payload| {
            Ok(f(decode(mtype, payload, what)?))
        })
    }

    /// [`Engine::dump_map`], passing each reply's type and payload undecoded to
    /// `f` (for a decoder of our own: `link::decode_link`); an error from `f`
    /// ends the dump with it.
    pub(crate) fn dump_raw_map<R>(
        &mut self,
        msg: RouteNetlinkMessage,
        what: &str,
        mut f: impl FnMut(u16, &[u8]) -> Result<Option<R>>,
    ) -> Result<Vec<R>> {
        let mut last = None;
        for _attempt in 0..MAX_DUMP_ATTEMPTS {
            let seq = self.send(msg.clone(), NLM_F_DUMP, what)?;
            let mut out = Vec::new();
            let ended = self.collect_raw(seq, what, &mut |mtype, payload| {
                if let Some(r) = f(mtype, payload)? {
                    out.push(r);
                }
                Ok(())
            })?;
            if ended == (Ended::Complete { interrupted: false }) {
                return Ok(out);
            }
            last = Some(ended);
        }
        if let Some(Ended::Truncated { needed, had }) = last {
            return Err(Error::new(
                ErrorKind::Netlink,
                format!(
                    "{what}: a {needed}-byte datagram still did not fit the {had}-byte receive \
                     buffer after {MAX_DUMP_ATTEMPTS} attempts (each grows it); retry"
                ),
            ));
        }
        Err(Error::new(
            ErrorKind::Netlink,
            format!(
                "{what}: the kernel interrupted the dump {MAX_DUMP_ATTEMPTS} times in a row \
                 (NLM_F_DUMP_INTR: the table kept changing while it was read); \
                 retry when the host is quieter"
            ),
        ))
    }

    /// Dump with `msg` and return every reply.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn dump(
        &mut self,
        msg: RouteNetlinkMessage,
        what: &str,
    ) -> Result<Vec<RouteNetlinkMessage>> {
        self.dump_map(msg, what, Some)
    }
}

fn read_u16(b: &[u8], at: usize) -> u16 {
    u16::from_ne_bytes([b[at], b[at + 1]])
}
fn read_u32(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
fn align4(n: usize) -> usize {
    (n + 3) & !3
}

/// Process one datagram (possibly several netlink messages) of the exchange `seq`.
/// Decode one rtnetlink message. Names that are not UTF-8 are set aside and put
/// back byte-exactly (netlink-packet-route refuses them: `names.rs`).
pub(super) fn decode(mtype: u16, payload: &[u8], what: &str) -> Result<RouteNetlinkMessage> {
    let (decodable, raw_names) = super::names::prepare(mtype, payload);
    let mut msg = RouteNetlinkMessage::parse_with_param(&decodable[..], mtype).map_err(|e| {
        Error::new(
            ErrorKind::Parse,
            format!("{what}: cannot decode netlink message type {mtype}: {e}"),
        )
    })?;
    super::names::restore(&mut msg, &raw_names);
    Ok(msg)
}

pub(super) fn handle_datagram(
    data: &[u8],
    seq: u32,
    port: u32,
    what: &str,
    interrupted: &mut bool,
    sink: &mut dyn FnMut(u16, &[u8]) -> Result<()>,
) -> Result<Step> {
    let mut off = 0;
    while off + NLMSG_HDRLEN <= data.len() {
        let len = read_u32(data, off) as usize;
        if len < NLMSG_HDRLEN || off + len > data.len() {
            return Err(Error::new(
                ErrorKind::Parse,
                format!("{what}: the kernel sent a malformed netlink message (length {len})"),
            ));
        }
        let mtype = read_u16(data, off + 4);
        let flags = read_u16(data, off + 6);
        let mseq = read_u32(data, off + 8);
        let mport = read_u32(data, off + 12);
        let payload = &data[off + NLMSG_HDRLEN..off + len];
        off += align4(len);
        log::trace!(
            "{what}: read netlink packet: type {mtype} flags {flags:#x} seq {mseq} port {mport} \
             payload {} bytes",
            payload.len()
        );
        // Not ours (a leftover of an abandoned exchange, or a stray multicast).
        if mseq != seq || (mport != port && mport != 0) {
            continue;
        }
        if flags & NLM_F_DUMP_INTR != 0 {
            *interrupted = true;
        }
        match mtype {
            NLMSG_NOOP => {}
            NLMSG_ERROR => {
                let code = if payload.len() >= 4 {
                    read_u32(payload, 0) as i32
                } else {
                    -libc::EPROTO
                };
                if code == 0 {
                    return Ok(Step::Finished);
                }
                return Err(kernel_error(code, error_extack(payload, flags), what));
            }
            NLMSG_DONE => {
                let code = if payload.len() >= 4 {
                    read_u32(payload, 0) as i32
                } else {
                    0
                };
                if code < 0 {
                    let extack = if flags & NLM_F_ACK_TLVS != 0 && payload.len() > 4 {
                        tlv_message(&payload[4..])
                    } else {
                        None
                    };
                    return Err(kernel_error(code, extack, what));
                }
                return Ok(Step::Finished);
            }
            NLMSG_OVERRUN => {
                return Err(Error::new(
                    ErrorKind::Netlink,
                    format!("{what}: the kernel reported a netlink overrun (data lost); retry"),
                ))
            }
            _ => sink(mtype, payload)?,
        }
    }
    Ok(Step::More)
}

/// The extack text (`NLMSGERR_ATTR_MSG`) of an `NLMSG_ERROR` payload.
fn error_extack(payload: &[u8], flags: u16) -> Option<String> {
    if flags & NLM_F_ACK_TLVS == 0 || payload.len() < 4 + NLMSG_HDRLEN {
        return None;
    }
    // After the error code comes the request: its header only when capped.
    let orig_len = if flags & NLM_F_CAPPED != 0 {
        NLMSG_HDRLEN
    } else {
        align4(read_u32(payload, 4) as usize)
    };
    let start = 4 + orig_len;
    payload.get(start..).and_then(tlv_message)
}

/// Find `NLMSGERR_ATTR_MSG` in a run of netlink attributes ([`super::attr`];
/// none after a malformed one).
fn tlv_message(tlvs: &[u8]) -> Option<String> {
    let body = super::attr::attributes(tlvs)
        .map_while(Result::ok)
        .find(|a| a.kind == NLMSGERR_ATTR_MSG)?
        .value;
    let end = body.iter().position(|b| *b == 0).unwrap_or(body.len());
    let text = String::from_utf8_lossy(&body[..end]).trim().to_string();
    (!text.is_empty()).then_some(text)
}

/// The error for a negative errno from the kernel.
fn kernel_error(code: i32, extack: Option<String>, what: &str) -> Error {
    let errno = code.checked_neg().unwrap_or(libc::EPROTO);
    let kind = match errno {
        libc::EPERM | libc::EACCES => ErrorKind::Permission,
        libc::ENOENT | libc::ENODEV | libc::ESRCH => ErrorKind::NotFound,
        libc::EOPNOTSUPP => ErrorKind::Unsupported,
        _ => ErrorKind::Netlink,
    };
    let mut err = Error::errno(errno, what).with_kind(kind);
    if let Some(x) = extack {
        err = err.with_extack(x);
    }
    err
}

#[cfg(test)]
mod tests {
    use super::*;
    use netlink_packet_route::route::RouteMessage;
    use std::collections::VecDeque;

    /// Scripted replies, as the kernel queues them: each request releases its
    /// batch of datagrams into the queue, a read finds only what is queued, and
    /// every message read is given the current request's sequence number.
    struct Script {
        batches: VecDeque<Vec<Vec<u8>>>,
        queued: VecDeque<Vec<u8>>,
        sent: usize,
        last_seq: u32,
    }

    impl Transport for Script {
        fn send(&mut self, data: &[u8]) -> std::io::Result<()> {
            self.sent += 1;
            self.last_seq = read_u32(data, 8);
            if let Some(batch) = self.batches.pop_front() {
                self.queued.extend(batch);
            }
            Ok(())
        }
        fn recv(&mut self, buf: &mut [MaybeUninit<u8>], _wait: bool) -> std::io::Result<usize> {
            let mut d = self
                .queued
                .pop_front()
                .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::WouldBlock))?;
            let mut off = 0;
            while off + 16 <= d.len() {
                let len = read_u32(&d, off) as usize;
                d[off + 8..off + 12].copy_from_slice(&self.last_seq.to_ne_bytes());
                off += align4(len.max(16));
            }
            for (to, from) in buf.iter_mut().zip(&d) {
                to.write(*from);
            }
            Ok(d.len())
        }
        fn port(&self) -> u32 {
            77
        }
    }

    fn nlmsg(mtype: u16, flags: u16, payload: &[u8]) -> Vec<u8> {
        let len = 16 + payload.len();
        let mut v = Vec::new();
        v.extend_from_slice(&(len as u32).to_ne_bytes());
        v.extend_from_slice(&mtype.to_ne_bytes());
        v.extend_from_slice(&flags.to_ne_bytes());
        v.extend_from_slice(&0u32.to_ne_bytes());
        v.extend_from_slice(&77u32.to_ne_bytes());
        v.extend_from_slice(payload);
        while v.len() % 4 != 0 {
            v.push(0);
        }
        v
    }

    fn route_msg(flags: u16) -> Vec<u8> {
        // RTM_NEWROUTE (24), a bare rtmsg for AF_INET, table main.
        let rtmsg = [2u8, 0, 0, 0, 254, 4, 0, 1, 0, 0, 0, 0];
        nlmsg(24, flags | 2, &rtmsg)
    }

    /// An engine whose first request releases all of `replies`.
    fn engine(replies: Vec<Vec<u8>>) -> Engine<Script> {
        scripted(vec![replies], RECV_BUF)
    }

    /// An engine with a `buf`-byte receive buffer whose n-th request releases
    /// the n-th batch of replies.
    fn scripted(batches: Vec<Vec<Vec<u8>>>, buf: usize) -> Engine<Script> {
        Engine::with_buffer(
            Script {
                batches: batches.into(),
                queued: VecDeque::new(),
                sent: 0,
                last_seq: 0,
            },
            buf,
        )
    }

    fn get_routes() -> RouteNetlinkMessage {
        RouteNetlinkMessage::GetRoute(RouteMessage::default())
    }

    #[test]
    fn dump_collects_multi_message_datagrams() {
        let mut d = route_msg(0);
        d.extend(route_msg(0));
        let mut e = engine(vec![d, [route_msg(0), nlmsg(3, 2, &[0; 4])].concat()]);
        let got = e.dump(get_routes(), "dumping routes").unwrap();
        assert_eq!(got.len(), 3);
        assert_eq!(e.transport.sent, 1);
    }

    /// Records of the `log` facade, per thread (tests run in parallel).
    struct Capture;
    thread_local! {
        static RECORDS: std::cell::RefCell<Vec<(log::Level, String)>> =
            const { std::cell::RefCell::new(Vec::new()) };
    }
    impl log::Log for Capture {
        fn enabled(&self, _: &log::Metadata<'_>) -> bool {
            true
        }
        fn log(&self, r: &log::Record<'_>) {
            RECORDS.with(|v| v.borrow_mut().push((r.level(), r.args().to_string())));
        }
        fn flush(&self) {}
    }

    /// With a logger installed, every packet sent and every message read is
    /// traced (as netavark does), decoded for the typed requests; without one
    /// the library prints nothing (it has no output of its own to print to).
    #[test]
    fn every_packet_is_traced_when_a_logger_listens() {
        static LOGGER: Capture = Capture;
        // Another test of this binary may have installed it already.
        let _ = log::set_logger(&LOGGER);
        log::set_max_level(log::LevelFilter::Trace);
        RECORDS.with(|v| v.borrow_mut().clear());
        let mut e = engine(vec![route_msg(0), nlmsg(3, 2, &[0; 4])]);
        e.dump(get_routes(), "dumping routes").unwrap();
        let records = RECORDS.with(|v| v.borrow().clone());
        let sent: Vec<_> = records
            .iter()
            .filter(|(_, m)| m.contains("send netlink packet"))
            .collect();
        let read: Vec<_> = records
            .iter()
            .filter(|(_, m)| m.contains("read netlink packet"))
            .collect();
        assert_eq!(sent.len(), 1, "{records:?}");
        assert!(
            sent[0].1.starts_with("dumping routes: ") && sent[0].1.contains("GetRoute"),
            "{records:?}"
        );
        assert_eq!(read.len(), 2, "{records:?}");
        assert!(
            read[0].1.contains("type 24") && read[1].1.contains("type 3"),
            "{records:?}"
        );
        assert!(
            records.iter().all(|(l, _)| *l == log::Level::Trace),
            "{records:?}"
        );
    }

    #[test]
    fn interrupted_dump_is_retried() {
        let intr = [route_msg(NLM_F_DUMP_INTR), nlmsg(3, 2, &[0; 4])].concat();
        let clean = [route_msg(0), route_msg(0), nlmsg(3, 2, &[0; 4])].concat();
        let mut e = engine(vec![intr, clean]);
        let got = e.dump(get_routes(), "dumping routes").unwrap();
        assert_eq!(e.transport.sent, 2, "the dump must be re-sent once");
        assert_eq!(
            got.len(),
            2,
            "results of the interrupted attempt are dropped"
        );
    }

    #[test]
    fn interrupted_flag_on_done_counts() {
        let intr = [route_msg(0), nlmsg(3, 2 | NLM_F_DUMP_INTR, &[0; 4])].concat();
        let clean = [route_msg(0), nlmsg(3, 2, &[0; 4])].concat();
        let mut e = engine(vec![intr, clean]);
        assert_eq!(e.dump(get_routes(), "x").unwrap().len(), 1);
        assert_eq!(e.transport.sent, 2);
    }

    #[test]
    fn always_interrupted_dump_gives_up() {
        let intr = [route_msg(NLM_F_DUMP_INTR), nlmsg(3, 2, &[0; 4])].concat();
        let mut e = engine(vec![intr; MAX_DUMP_ATTEMPTS + 2]);
        let err = e.dump(get_routes(), "dumping routes").unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Netlink);
        assert!(err.to_string().contains("interrupted"), "{err}");
        assert_eq!(e.transport.sent, MAX_DUMP_ATTEMPTS);
    }

    #[test]
    fn foreign_sequence_numbers_are_skipped() {
        // A message for another port is ignored; our ACK finishes the request.
        let mut stray = route_msg(0);
        stray[12..16].copy_from_slice(&5u32.to_ne_bytes());
        let ack = nlmsg(2, NLM_F_CAPPED, &[0u8; 20]);
        let mut e = engine(vec![[stray, ack].concat()]);
        let got = e.request(get_routes(), 0, "x").unwrap();
        assert!(got.is_empty());
    }

    #[test]
    fn error_keeps_errno_and_extack() {
        let mut p = Vec::new();
        p.extend_from_slice(&(-libc::EEXIST).to_ne_bytes());
        p.extend_from_slice(&[0u8; 16]); // capped original header
        let text = b"Route already exists\0";
        let alen = 4 + text.len();
        p.extend_from_slice(&(alen as u16).to_ne_bytes());
        p.extend_from_slice(&NLMSGERR_ATTR_MSG.to_ne_bytes());
        p.extend_from_slice(text);
        let mut e = engine(vec![nlmsg(2, NLM_F_CAPPED | NLM_F_ACK_TLVS, &p)]);
        let err = e
            .request(get_routes(), 0, "adding route 198.18.0.0/24 table 1000")
            .unwrap_err();
        assert_eq!(err.errno_value(), Some(libc::EEXIST));
        assert_eq!(err.extack(), Some("Route already exists"));
        assert_eq!(err.kind(), ErrorKind::Netlink);
        assert!(err.to_string().starts_with("adding route 198.18.0.0/24"));
    }

    #[test]
    fn done_with_error_fails_the_dump() {
        let mut p = Vec::new();
        p.extend_from_slice(&(-libc::EINVAL).to_ne_bytes());
        let mut e = engine(vec![nlmsg(3, 2, &p)]);
        let err = e.dump(get_routes(), "dumping routes").unwrap_err();
        assert_eq!(err.errno_value(), Some(libc::EINVAL));
    }

    #[test]
    fn truncated_message_is_an_error() {
        let mut d = route_msg(0);
        d[0..4].copy_from_slice(&4000u32.to_ne_bytes());
        let mut e = engine(vec![d]);
        assert_eq!(
            e.dump(get_routes(), "x").unwrap_err().kind(),
            ErrorKind::Parse
        );
    }

    #[test]
    fn uncapped_error_skips_the_echoed_request() {
        // Without NLM_F_CAPPED the kernel echoes the whole request before the TLVs.
        let mut req = nlmsg(24, 5, &[2u8, 0, 0, 0, 254, 4, 0, 1, 0, 0, 0, 0]);
        req[12..16].copy_from_slice(&0u32.to_ne_bytes());
        let mut p = Vec::new();
        p.extend_from_slice(&(-libc::EINVAL).to_ne_bytes());
        p.extend_from_slice(&req);
        let text = b"Invalid prefix for given prefix length\0";
        p.extend_from_slice(&((4 + text.len()) as u16).to_ne_bytes());
        p.extend_from_slice(&NLMSGERR_ATTR_MSG.to_ne_bytes());
        p.extend_from_slice(text);
        let mut e = engine(vec![nlmsg(2, NLM_F_ACK_TLVS, &p)]);
        let err = e.request(get_routes(), 0, "adding route").unwrap_err();
        assert_eq!(err.extack(), Some("Invalid prefix for given prefix length"));
        assert_eq!(err.errno_value(), Some(libc::EINVAL));
    }

    /// A route message padded with an unknown attribute to `len` bytes.
    fn big_route_msg(len: usize) -> Vec<u8> {
        let mut rtmsg = vec![2u8, 0, 0, 0, 254, 4, 0, 1, 0, 0, 0, 0];
        let alen = len - 16 - rtmsg.len();
        rtmsg.extend_from_slice(&(alen as u16).to_ne_bytes());
        rtmsg.extend_from_slice(&200u16.to_ne_bytes());
        rtmsg.resize(len - 16, 0);
        nlmsg(24, 2, &rtmsg)
    }

    #[test]
    fn datagram_larger_than_the_buffer_reruns_the_dump_with_a_larger_one() {
        let done = nlmsg(3, 2, &[0; 4]);
        let attempt = vec![route_msg(0), big_route_msg(600), route_msg(0), done.clone()];
        let mut e = scripted(vec![attempt.clone(), attempt], 256);
        let got = e.dump(get_routes(), "dumping routes").unwrap();
        assert_eq!(
            got.len(),
            3,
            "every route of the rerun, none of the cut one"
        );
        assert_eq!(e.transport.sent, 2, "the dump is sent again once");
        assert!(
            e.buf.capacity() >= 600,
            "the buffer grew to {}",
            e.buf.capacity()
        );
        assert!(
            e.transport.queued.is_empty(),
            "the cut exchange was read to its end"
        );
    }

    #[test]
    fn request_whose_reply_did_not_fit_fails_and_the_next_one_works() {
        let ack = nlmsg(2, NLM_F_CAPPED, &[0u8; 20]);
        let mut e = scripted(vec![vec![big_route_msg(600), ack.clone()], vec![ack]], 256);
        let err = e.request(get_routes(), 0, "getting route").unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Netlink);
        let text = err.to_string();
        assert!(
            text.contains("getting route") && text.contains("600 bytes") && text.contains("256"),
            "{text}"
        );
        assert!(e.request(get_routes(), 0, "again").unwrap().is_empty());
    }

    /// On a real kernel: a link dump read through a buffer smaller than one link
    /// message is read to its end, sent again with a grown buffer, and gives
    /// what a normal read gives; a request after it is answered normally.
    #[test]
    #[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
    fn kernel_dump_larger_than_the_buffer_is_rerun() {
        crate::test_support::require_root("kernel_dump_larger_than_the_buffer_is_rerun");
        use netlink_packet_route::link::LinkMessage;
        let mut lab = crate::lab::Lab::new("nl-trunc").unwrap();
        let ns = lab.add_namespace("x").unwrap();
        let target = crate::netns::NetnsTarget::named(&ns).unwrap();
        let (small, normal, sent) = target
            .run(|| {
                let mut nl = super::super::Netlink::open()?;
                for i in 0..4 {
                    nl.link_add_bridge(&format!("b{i}"))?;
                }
                let names = |v: Vec<RouteNetlinkMessage>| -> Vec<String> {
                    v.iter()
                        .filter_map(|m| match m {
                            RouteNetlinkMessage::NewLink(l) => {
                                l.attributes.iter().find_map(|a| match a {
                                    netlink_packet_route::link::LinkAttribute::IfName(n) => {
                                        Some(n.clone())
                                    }
                                    _ => None,
                                })
                            }
                            _ => None,
                        })
                        .collect()
                };
                let get = || RouteNetlinkMessage::GetLink(LinkMessage::default());
                let mut e = Engine::with_buffer(KernelTransport::open()?, 256);
                let small = names(e.dump(get(), "dumping links")?);
                let sent = e.seq;
                // The socket is in step again: a request and a dump both work.
                let mut lo = LinkMessage::default();
                lo.header.index = 1;
                let got = e.request(RouteNetlinkMessage::GetLink(lo), 0, "getting lo")?;
                assert_eq!(names(got), ["lo"]);
                let again = names(e.dump(get(), "dumping links")?);
                assert_eq!(again, small);
                let normal =
                    names(Engine::new(KernelTransport::open()?).dump(get(), "dumping links")?);
                Ok((small, normal, sent))
            })
            .unwrap();
        assert_eq!(small, normal);
        assert_eq!(small.len(), 5, "lo and four bridges: {small:?}");
        assert_eq!(sent, 2, "the cut dump is sent again once");
        lab.destroy().unwrap();
    }

    /// The kernel transport, running `hook` once after the first datagram.
    struct Churn<F: FnMut()> {
        inner: KernelTransport,
        hook: Option<F>,
        sent: usize,
    }

    impl<F: FnMut()> Transport for Churn<F> {
        fn send(&mut self, data: &[u8]) -> std::io::Result<()> {
            self.sent += 1;
            self.inner.send(data)
        }
        fn recv(&mut self, buf: &mut [MaybeUninit<u8>], wait: bool) -> std::io::Result<usize> {
            let n = self.inner.recv(buf, wait)?;
            if let Some(mut h) = self.hook.take() {
                h();
            }
            Ok(n)
        }
        fn port(&self) -> u32 {
            self.inner.port()
        }
    }

    /// On a real kernel: an address added while an address dump is between two
    /// datagrams makes the kernel flag the rest `NLM_F_DUMP_INTR`; the dump is
    /// run again and the result includes the new address.
    #[test]
    #[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
    fn kernel_interrupted_dump_is_retried() {
        crate::test_support::require_root("kernel_interrupted_dump_is_retried");
        use netlink_packet_route::address::AddressMessage;
        use netlink_packet_route::AddressFamily;
        let mut lab = crate::lab::Lab::new("nl-intr").unwrap();
        let ns = lab.add_namespace("x").unwrap();
        let target = crate::netns::NetnsTarget::named(&ns).unwrap();
        let (sent, got) = target
            .run(|| {
                let mut nl = super::super::Netlink::open()?;
                nl.link_add_bridge("b0")?;
                // 2000 addresses: the dump spans many datagrams, more than the kernel
                // queues ahead of our reads.
                for i in 0..2000u32 {
                    let ip = std::net::Ipv4Addr::from(0xC612_0000 + i);
                    nl.addr_add("b0", ip.into(), 32)?;
                }
                let late: std::net::IpAddr = "198.19.0.1".parse().unwrap();
                let hook = || {
                    // A second socket in the same namespace changes the table.
                    let mut other = super::super::Netlink::open().unwrap();
                    other.addr_add("b0", late, 32).unwrap();
                };
                let mut e = Engine::new(Churn {
                    inner: KernelTransport::open()?,
                    hook: Some(hook),
                    sent: 0,
                });
                let mut m = AddressMessage::default();
                m.header.family = AddressFamily::Inet;
                let got = e.dump(RouteNetlinkMessage::GetAddress(m), "dumping addresses")?;
                let has_late = got.iter().any(|r| {
                    matches!(r, RouteNetlinkMessage::NewAddress(a)
                        if a.attributes.iter().any(|x| matches!(x,
                            netlink_packet_route::address::AddressAttribute::Local(ip) if *ip == late)))
                });
                assert!(has_late, "the retried dump must see the late address");
                Ok((e.transport.sent, got.len()))
            })
            .unwrap();
        assert_eq!(sent, 2, "the interrupted dump must be sent again once");
        assert_eq!(
            got, 2002,
            "127.0.0.1 on lo (the lab brings it up) and 2001 on b0"
        );
        lab.destroy().unwrap();
    }
}
