//! A software model of an RDMA NIC for the tests (never built into the product).
//!
//! Each queue pair is a UDP socket bound to the GID's IPv4 address; its QP
//! number is the socket's port, so the exchanged (GID, QPN) pair is exactly
//! what addresses the peer. Sends and RDMA writes are datagrams that the
//! receiving "NIC" acknowledges; unacknowledged work requests are retransmitted
//! every [`ACK_TIMEOUT`] and fail with status 12 (transport retry counter
//! exceeded) after [`RETRIES`] retries, as an RC queue pair does. Like a RoCE
//! NIC, it only accepts frames that arrived on the netdev owning the
//! destination GID (`IP_PKTINFO`): a frame delivered to another NIC's MAC —
//! ARP flux — is dropped, and the sender sees status 12. Every packet carries a
//! sequence number, so a retransmitted one that already arrived is acknowledged
//! again but not delivered twice (as an RC responder does with duplicate PSNs).

use super::super::select::RdmaSelection;
use super::super::status::{WC_REM_ACCESS_ERR, WC_RETRY_EXC_ERR, WC_RNR_RETRY_EXC_ERR};
use super::super::{Backend, Completion, ConnectParams, Queue, QueueInfo, Stage, VerbsFailure};
use crate::error::{Error, ErrorKind, Result};
use std::collections::VecDeque;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const ACK_TIMEOUT: Duration = Duration::from_millis(100);
pub const RETRIES: u32 = 7;
const BASE_ADDR: u64 = 0x7f00_0000_0000;
const HDR: usize = 32;

/// How the model misbehaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Like hardware.
    Normal,
    /// Receives and never answers (a path that drops RoCE).
    BlackHole,
    /// `ibv_modify_qp(RTR)` fails with this errno (ETIMEDOUT: no ARP reply).
    FailRtr(i32),
    /// `available()` says there is no RDMA.
    NoRdma,
    /// Acknowledges RDMA writes but stores them with their first byte flipped
    /// (memory the data check must catch).
    CorruptWrites,
}

pub struct FakeBackend {
    pub mode: Mode,
    /// Active MTU the "port" reports.
    pub active_mtu: u32,
    /// The size of every buffer registered so far (what a real NIC would pin).
    pub registered: Mutex<Vec<usize>>,
}

impl FakeBackend {
    pub fn new(mode: Mode) -> FakeBackend {
        FakeBackend {
            mode,
            active_mtu: 1024,
            registered: Mutex::new(Vec::new()),
        }
    }
}

impl Backend for FakeBackend {
    fn available(&self) -> Result<()> {
        if self.mode == Mode::NoRdma {
            return Err(Error::new(
                ErrorKind::NoRdma,
                "no_devices: the fake has no devices",
            ));
        }
        Ok(())
    }

    fn open(
        &self,
        sel: &RdmaSelection,
        buf_len: usize,
        _depth: u32,
    ) -> std::result::Result<Box<dyn Queue>, VerbsFailure> {
        let IpAddr::V4(v4) = sel.address else {
            return Err(VerbsFailure::new("fake: IPv4 only", Some(libc::EINVAL)));
        };
        if let Ok(mut r) = self.registered.lock() {
            r.push(buf_len);
        }
        let sock = UdpSocket::bind((v4, 0))
            .map_err(|e| VerbsFailure::new("fake bind", e.raw_os_error()))?;
        crate::sys::setsockopt(&sock, libc::IPPROTO_IP, libc::IP_PKTINFO, 1)
            .map_err(|e| VerbsFailure::new("fake pktinfo", e.raw_os_error()))?;
        sock.set_read_timeout(Some(Duration::from_millis(5)))
            .map_err(|e| VerbsFailure::new("fake timeout", e.raw_os_error()))?;
        let name = std::ffi::CString::new(sel.netdev.clone()).unwrap_or_default();
        // SAFETY: valid C string.
        let ifindex = unsafe { libc::if_nametoindex(name.as_ptr()) };
        let port = sock.local_addr().map(|a| a.port()).unwrap_or(0);
        let shared = Arc::new(Shared {
            buf: Mutex::new(vec![0u8; buf_len]),
            recvs: Mutex::new(VecDeque::new()),
            cq: Mutex::new(VecDeque::new()),
            pending: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
            rkey: 0x5eed_0000 | u32::from(port),
            peer: Mutex::new(None),
            seen: Mutex::new(std::collections::HashSet::new()),
        });
        let nic = Nic {
            sock: sock
                .try_clone()
                .map_err(|e| VerbsFailure::new("fake clone", e.raw_os_error()))?,
            shared: shared.clone(),
            ifindex,
            mode: self.mode,
        };
        let thread = std::thread::spawn(move || nic.run());
        Ok(Box::new(FakeQueue {
            sock,
            shared,
            thread: Some(thread),
            qpn: u32::from(port),
            mode: self.mode,
            active_mtu: self.active_mtu,
            errored: false,
            next_seq: 0,
        }))
    }
}

struct Pending {
    wr_id: u64,
    packet: Vec<u8>,
    sent: Instant,
    tries: u32,
    rnr: u32,
}

struct Shared {
    buf: Mutex<Vec<u8>>,
    recvs: Mutex<VecDeque<(u64, usize, usize)>>,
    cq: Mutex<VecDeque<Completion>>,
    pending: Mutex<Vec<Pending>>,
    stop: AtomicBool,
    rkey: u32,
    peer: Mutex<Option<SocketAddr>>,
    /// Sequence numbers delivered (duplicates are re-acknowledged only).
    seen: Mutex<std::collections::HashSet<u32>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

const SEND: u8 = 1;
const WRITE: u8 = 2;
const ACK: u8 = 3;
const NAK_RNR: u8 = 4;
const NAK_ACCESS: u8 = 5;

fn packet(kind: u8, wr_id: u64, raddr: u64, rkey: u32, data: &[u8]) -> Vec<u8> {
    let mut p = vec![0u8; HDR];
    p[0] = kind;
    // Bytes 4..8: the sequence number, set by `FakeQueue::transmit`.
    p[8..16].copy_from_slice(&wr_id.to_le_bytes());
    p[16..24].copy_from_slice(&raddr.to_le_bytes());
    p[24..28].copy_from_slice(&rkey.to_le_bytes());
    p[28..32].copy_from_slice(&(data.len() as u32).to_le_bytes());
    p.extend_from_slice(data);
    p
}

struct Nic {
    sock: UdpSocket,
    shared: Arc<Shared>,
    ifindex: u32,
    mode: Mode,
}

impl Nic {
    /// Receive one datagram with the ifindex it arrived on.
    fn recv(&self, buf: &mut [u8]) -> Option<(usize, SocketAddr, u32)> {
        let mut name: libc::sockaddr_in = unsafe { std::mem::zeroed() };
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        let mut cbuf = [0u8; 128];
        // SAFETY: msghdr points at live buffers of the given sizes.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_name = (&mut name as *mut libc::sockaddr_in).cast();
        msg.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as u32;
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf.as_mut_ptr().cast();
        msg.msg_controllen = cbuf.len();
        // SAFETY: as above.
        let n = unsafe { libc::recvmsg(self.sock.as_raw_fd(), &mut msg, 0) };
        if n < 0 {
            return None;
        }
        let mut ifindex = 0u32;
        // SAFETY: walking the control messages the kernel wrote.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                if (*c).cmsg_level == libc::IPPROTO_IP && (*c).cmsg_type == libc::IP_PKTINFO {
                    let info = libc::CMSG_DATA(c) as *const libc::in_pktinfo;
                    ifindex = (*info).ipi_ifindex as u32;
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
        }
        let ip = std::net::Ipv4Addr::from(u32::from_be(name.sin_addr.s_addr));
        Some((
            n as usize,
            SocketAddr::new(IpAddr::V4(ip), u16::from_be(name.sin_port)),
            ifindex,
        ))
    }

    fn run(self) {
        let mut buf = vec![0u8; 65536];
        while !self.shared.stop.load(Ordering::Relaxed) {
            if let Some((n, from, ifindex)) = self.recv(&mut buf) {
                if n >= HDR && (self.ifindex == 0 || ifindex == self.ifindex) {
                    self.handle(&buf[..n], from);
                }
            }
            self.retransmit();
        }
    }

    fn reply(&self, to: SocketAddr, kind: u8, wr_id: u64) {
        let _ = self.sock.send_to(&packet(kind, wr_id, 0, 0, &[]), to);
    }

    fn handle(&self, p: &[u8], from: SocketAddr) {
        let kind = p[0];
        let wr_id = u64::from_le_bytes(p[8..16].try_into().unwrap_or_default());
        let raddr = u64::from_le_bytes(p[16..24].try_into().unwrap_or_default());
        let rkey = u32::from_le_bytes(p[24..28].try_into().unwrap_or_default());
        let data = &p[HDR..];
        let s = &self.shared;
        let seq = u32::from_le_bytes(p[4..8].try_into().unwrap_or_default());
        if (kind == SEND || kind == WRITE)
            && self.mode != Mode::BlackHole
            && lock(&s.seen).contains(&seq)
        {
            self.reply(from, ACK, wr_id);
            return;
        }
        match kind {
            SEND | WRITE if self.mode == Mode::BlackHole => {}
            SEND => {
                let posted = lock(&s.recvs).pop_front();
                match posted {
                    Some((id, off, len)) => {
                        let n = data.len().min(len);
                        lock(&s.buf)[off..off + n].copy_from_slice(&data[..n]);
                        lock(&s.cq).push_back(Completion {
                            wr_id: id,
                            status: 0,
                            vendor_err: 0,
                            byte_len: n as u32,
                        });
                        lock(&s.seen).insert(seq);
                        self.reply(from, ACK, wr_id);
                    }
                    None => self.reply(from, NAK_RNR, wr_id),
                }
            }
            WRITE => {
                let mut b = lock(&s.buf);
                let off = raddr.wrapping_sub(BASE_ADDR) as usize;
                if rkey != s.rkey || raddr < BASE_ADDR || off.saturating_add(data.len()) > b.len() {
                    drop(b);
                    self.reply(from, NAK_ACCESS, wr_id);
                } else {
                    b[off..off + data.len()].copy_from_slice(data);
                    if self.mode == Mode::CorruptWrites && !data.is_empty() {
                        b[off] ^= 0xff;
                    }
                    drop(b);
                    lock(&s.seen).insert(seq);
                    self.reply(from, ACK, wr_id);
                }
            }
            ACK | NAK_ACCESS => {
                let mut pend = lock(&s.pending);
                if let Some(i) = pend.iter().position(|x| x.wr_id == wr_id) {
                    pend.remove(i);
                    let status = if kind == ACK { 0 } else { WC_REM_ACCESS_ERR };
                    lock(&s.cq).push_back(Completion {
                        wr_id,
                        status,
                        vendor_err: 0,
                        byte_len: 0,
                    });
                }
            }
            NAK_RNR => {
                let mut pend = lock(&s.pending);
                if let Some(x) = pend.iter_mut().find(|x| x.wr_id == wr_id) {
                    x.rnr += 1;
                    // Retry at once (min_rnr_timer is tiny here).
                    x.sent = Instant::now() - ACK_TIMEOUT;
                    if x.rnr > RETRIES {
                        let id = x.wr_id;
                        pend.retain(|x| x.wr_id != id);
                        lock(&s.cq).push_back(Completion {
                            wr_id: id,
                            status: WC_RNR_RETRY_EXC_ERR,
                            vendor_err: 0,
                            byte_len: 0,
                        });
                    }
                }
            }
            _ => {}
        }
    }

    fn retransmit(&self) {
        let s = &self.shared;
        let Some(peer) = *lock(&s.peer) else { return };
        let mut pend = lock(&s.pending);
        let mut failed = Vec::new();
        for x in pend.iter_mut() {
            if x.sent.elapsed() >= ACK_TIMEOUT {
                if x.tries >= RETRIES {
                    failed.push(x.wr_id);
                    continue;
                }
                x.tries += 1;
                x.sent = Instant::now();
                let _ = self.sock.send_to(&x.packet, peer);
            }
        }
        pend.retain(|x| !failed.contains(&x.wr_id));
        let mut cq = lock(&s.cq);
        for id in failed {
            cq.push_back(Completion {
                wr_id: id,
                status: WC_RETRY_EXC_ERR,
                vendor_err: 0x81,
                byte_len: 0,
            });
        }
    }
}

struct FakeQueue {
    sock: UdpSocket,
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
    qpn: u32,
    mode: Mode,
    active_mtu: u32,
    errored: bool,
    next_seq: u32,
}

impl Drop for FakeQueue {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl FakeQueue {
    fn transmit(&mut self, wr_id: u64, mut p: Vec<u8>) -> std::result::Result<(), VerbsFailure> {
        p[4..8].copy_from_slice(&self.next_seq.to_le_bytes());
        self.next_seq = self.next_seq.wrapping_add(1);
        if self.errored {
            lock(&self.shared.cq).push_back(Completion {
                wr_id,
                status: 5,
                vendor_err: 0,
                byte_len: 0,
            });
            return Ok(());
        }
        let peer = (*lock(&self.shared.peer))
            .ok_or(VerbsFailure::new("fake: not connected", Some(libc::EINVAL)))?;
        if p.len() > 65000 {
            return Err(VerbsFailure::new(
                "fake: message too large",
                Some(libc::EINVAL),
            ));
        }
        let _ = self.sock.send_to(&p, peer);
        lock(&self.shared.pending).push(Pending {
            wr_id,
            packet: p,
            sent: Instant::now(),
            tries: 0,
            rnr: 0,
        });
        Ok(())
    }
}

impl Queue for FakeQueue {
    fn info(&self) -> QueueInfo {
        QueueInfo {
            qpn: self.qpn,
            psn: self.qpn ^ 0x00ab_cdef,
            lid: 0,
            rkey: self.shared.rkey,
            addr: BASE_ADDR,
            len: lock(&self.shared.buf).len() as u64,
            active_mtu: Some(self.active_mtu),
            port_state: Some("ACTIVE".into()),
        }
    }

    fn connect(&mut self, p: &ConnectParams) -> std::result::Result<(), (Stage, VerbsFailure)> {
        if let Mode::FailRtr(e) = self.mode {
            return Err((
                Stage::ReadyToReceive,
                VerbsFailure::new("ibv_modify_qp(RTR)", Some(e)),
            ));
        }
        let Some(v4) = p.dgid.to_ipv4_mapped() else {
            return Err((
                Stage::ReadyToReceive,
                VerbsFailure::new("ibv_modify_qp(RTR)", Some(libc::EINVAL)),
            ));
        };
        let port = u16::try_from(p.dest_qpn).map_err(|_| {
            (
                Stage::ReadyToReceive,
                VerbsFailure::new("fake qpn", Some(libc::EINVAL)),
            )
        })?;
        *lock(&self.shared.peer) = Some(SocketAddr::new(IpAddr::V4(v4), port));
        Ok(())
    }

    fn write_local(&mut self, off: usize, data: &[u8]) {
        let mut b = lock(&self.shared.buf);
        let end = (off + data.len()).min(b.len());
        if off < end {
            b[off..end].copy_from_slice(&data[..end - off]);
        }
    }

    fn read_local(&self, off: usize, len: usize) -> Vec<u8> {
        let b = lock(&self.shared.buf);
        let end = (off + len).min(b.len());
        b.get(off..end).map(<[u8]>::to_vec).unwrap_or_default()
    }

    fn post_recv(
        &mut self,
        wr_id: u64,
        off: usize,
        len: usize,
    ) -> std::result::Result<(), VerbsFailure> {
        lock(&self.shared.recvs).push_back((wr_id, off, len));
        Ok(())
    }

    fn post_send(
        &mut self,
        wr_id: u64,
        off: usize,
        len: usize,
    ) -> std::result::Result<(), VerbsFailure> {
        let data = self.read_local(off, len);
        self.transmit(wr_id, packet(SEND, wr_id, 0, 0, &data))
    }

    fn post_write(
        &mut self,
        wr_id: u64,
        off: usize,
        len: usize,
        raddr: u64,
        rkey: u32,
    ) -> std::result::Result<(), VerbsFailure> {
        let data = self.read_local(off, len);
        self.transmit(wr_id, packet(WRITE, wr_id, raddr, rkey, &data))
    }

    fn poll(&mut self) -> std::result::Result<Option<Completion>, VerbsFailure> {
        let c = lock(&self.shared.cq).pop_front();
        if let Some(c) = &c {
            if c.status != 0 {
                self.errored = true;
            }
        }
        Ok(c)
    }
}
