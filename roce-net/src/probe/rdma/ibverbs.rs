//! The production [`Backend`]: an RC queue pair through libibverbs, set up as
//! `ibv_rc_pingpong` does (rdma-core `libibverbs/examples/rc_pingpong.c`): PD,
//! one CQ for both directions, a registered buffer, the QP through INIT, RTR
//! (with the peer's GID as the GRH destination) and RTS.
//!
//! Not exercised on RDMA hardware (see docs/rdma-probe.md): the machines this
//! was written on have no RDMA devices and no RDMA support in the kernel, so
//! these calls were only run up to `ibv_get_device_list` (which answers ENOSYS).

use super::select::RdmaSelection;
use super::{Backend, Completion, ConnectParams, Queue, QueueInfo, Stage, VerbsFailure};
use crate::error::{Error, ErrorKind, Result};
use crate::kernel::verbs::ffi::*;
use crate::kernel::verbs::lib::Lib;
use crate::kernel::verbs::{explain_device_list, explain_open_failure, VerbsOptions};
use crate::model::{ib_mtu_bytes, ib_mtu_enum, PortState};
use std::ffi::c_void;

/// libibverbs, loaded on first use.
pub(crate) struct VerbsBackend {
    opts: VerbsOptions,
}

impl VerbsBackend {
    pub(crate) fn new(opts: VerbsOptions) -> VerbsBackend {
        VerbsBackend { opts }
    }

    fn lib(&self) -> Result<&'static Lib> {
        Lib::load(self.opts.library.as_deref())
            .map_err(|n| Error::new(ErrorKind::NoRdma, format!("{}: {}", n.reason, n.detail)))
    }
}

fn errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .filter(|e| *e != 0)
        .unwrap_or(libc::EIO)
}

impl Backend for VerbsBackend {
    fn available(&self) -> Result<()> {
        let lib = self.lib()?;
        match lib.devices() {
            Ok(l) if !l.is_empty() => Ok(()),
            Ok(_) => {
                let n = explain_device_list(None, &self.opts.sysfs_root);
                Err(Error::new(
                    ErrorKind::NoRdma,
                    format!("{}: {}", n.reason, n.detail),
                ))
            }
            Err(e) => {
                let n = explain_device_list(Some(e), &self.opts.sysfs_root);
                Err(
                    Error::new(ErrorKind::NoRdma, format!("{}: {}", n.reason, n.detail))
                        .with_errno(e),
                )
            }
        }
    }

    fn open(
        &self,
        sel: &RdmaSelection,
        buf_len: usize,
        depth: u32,
    ) -> std::result::Result<Box<dyn Queue>, VerbsFailure> {
        let lib = self
            .lib()
            .map_err(|_| VerbsFailure::new("dlopen(libibverbs)", None))?;
        let ctx = lib.open_by_name(&sel.device).map_err(|e| {
            let mut f = VerbsFailure::new("ibv_open_device", Some(e));
            if let Some(n) = explain_open_failure(e, &sel.device, &self.opts.dev_root) {
                f.call = format!("ibv_open_device ({})", n.detail);
            }
            f
        })?;
        let mut q = IbvQueue {
            lib,
            ctx,
            pd: std::ptr::null_mut(),
            cq: std::ptr::null_mut(),
            mr: std::ptr::null_mut(),
            qp: std::ptr::null_mut(),
            buf: vec![0u8; buf_len.max(64)].into_boxed_slice(),
            port: sel.port,
            psn: 0,
            info_mtu: None,
            info_state: None,
            lid: 0,
            infiniband: sel.is_infiniband(),
        };
        q.setup(depth)?;
        Ok(Box::new(q))
    }
}

/// One queue pair and everything it needs, destroyed in reverse on drop.
struct IbvQueue {
    lib: &'static Lib,
    ctx: *mut ibv_context,
    pd: *mut c_void,
    cq: *mut ibv_cq,
    mr: *mut ibv_mr,
    qp: *mut ibv_qp,
    /// The registered memory; a boxed slice never moves.
    buf: Box<[u8]>,
    port: u32,
    psn: u32,
    info_mtu: Option<u32>,
    info_state: Option<PortState>,
    lid: u16,
    infiniband: bool,
}

// SAFETY: the verbs objects are used by one thread at a time (the queue is
// moved into the session's thread and only used there); libibverbs objects
// may be used from any thread.
unsafe impl Send for IbvQueue {}

impl IbvQueue {
    fn setup(&mut self, depth: u32) -> std::result::Result<(), VerbsFailure> {
        let l = self.lib;
        let port = u8::try_from(self.port)
            .map_err(|_| VerbsFailure::new("port number", Some(libc::EINVAL)))?;
        let mut pa = ibv_port_attr::default();
        // SAFETY: ctx is open; pa is zeroed and large enough (layout test).
        let rc = unsafe { (l.query_port)(self.ctx, port, &mut pa) };
        if rc != 0 {
            return Err(VerbsFailure::new("ibv_query_port", Some(rc)));
        }
        self.info_mtu = ib_mtu_bytes(pa.active_mtu);
        self.info_state = Some(PortState::from_number(pa.state));
        self.lid = pa.lid;
        // SAFETY: ctx is open.
        self.pd = unsafe { (l.alloc_pd)(self.ctx) };
        if self.pd.is_null() {
            return Err(VerbsFailure::new("ibv_alloc_pd", Some(errno())));
        }
        let access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
        // SAFETY: buf is owned by self and outlives the MR (dereg in Drop first).
        self.mr = unsafe {
            (l.reg_mr)(
                self.pd,
                self.buf.as_mut_ptr().cast(),
                self.buf.len(),
                access,
            )
        };
        if self.mr.is_null() {
            return Err(VerbsFailure::new("ibv_reg_mr", Some(errno())));
        }
        let cqe = i32::try_from(depth * 2 + 2).unwrap_or(64);
        // SAFETY: ctx is open; no channel, no context.
        self.cq =
            unsafe { (l.create_cq)(self.ctx, cqe, std::ptr::null_mut(), std::ptr::null_mut(), 0) };
        if self.cq.is_null() {
            return Err(VerbsFailure::new("ibv_create_cq", Some(errno())));
        }
        let mut init = ibv_qp_init_attr {
            qp_context: std::ptr::null_mut(),
            send_cq: self.cq.cast(),
            recv_cq: self.cq.cast(),
            srq: std::ptr::null_mut(),
            cap: ibv_qp_cap {
                max_send_wr: depth,
                max_recv_wr: depth,
                max_send_sge: 1,
                max_recv_sge: 1,
                max_inline_data: 0,
            },
            qp_type: IBV_QPT_RC,
            sq_sig_all: 0,
        };
        // SAFETY: pd is live; init is a valid attribute struct.
        self.qp = unsafe { (l.create_qp)(self.pd, &mut init) };
        if self.qp.is_null() {
            return Err(VerbsFailure::new("ibv_create_qp", Some(errno())));
        }
        let mut a = ibv_qp_attr {
            qp_state: IBV_QPS_INIT,
            pkey_index: 0,
            port_num: port,
            qp_access_flags: access as u32,
            ..Default::default()
        };
        // SAFETY: qp is live; a is a valid attribute struct.
        let rc = unsafe {
            (l.modify_qp)(
                self.qp,
                &mut a,
                IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
            )
        };
        if rc != 0 {
            return Err(VerbsFailure::new("ibv_modify_qp(INIT)", Some(rc)));
        }
        // A random 24-bit PSN, as rc_pingpong does.
        let mut r = [0u8; 4];
        self.psn = if crate::sys::getrandom(&mut r) {
            u32::from_le_bytes(r) & 0x00ff_ffff
        } else {
            0x1234
        };
        Ok(())
    }

    fn addr(&self, off: usize) -> u64 {
        self.buf.as_ptr() as u64 + off as u64
    }
}

impl Drop for IbvQueue {
    fn drop(&mut self) {
        let l = self.lib;
        // SAFETY: each object was created here, is destroyed once, in reverse
        // order of creation; null ones were never created.
        unsafe {
            if !self.qp.is_null() {
                (l.destroy_qp)(self.qp);
            }
            if !self.cq.is_null() {
                (l.destroy_cq)(self.cq);
            }
            if !self.mr.is_null() {
                (l.dereg_mr)(self.mr);
            }
            if !self.pd.is_null() {
                (l.dealloc_pd)(self.pd);
            }
            if !self.ctx.is_null() {
                (l.close_device)(self.ctx);
            }
        }
    }
}

impl Queue for IbvQueue {
    fn info(&self) -> QueueInfo {
        // SAFETY: qp and mr are live after setup.
        let (qpn, rkey) = unsafe { ((*self.qp).qp_num, (*self.mr).rkey) };
        QueueInfo {
            qpn,
            psn: self.psn,
            lid: self.lid,
            rkey,
            addr: self.addr(0),
            len: self.buf.len() as u64,
            active_mtu: self.info_mtu,
            port_state: self.info_state.clone(),
        }
    }

    fn connect(&mut self, p: &ConnectParams) -> std::result::Result<(), (Stage, VerbsFailure)> {
        let l = self.lib;
        let mtu = ib_mtu_enum(p.path_mtu).ok_or((
            Stage::ReadyToReceive,
            VerbsFailure::new("path MTU", Some(libc::EINVAL)),
        ))?;
        let port = u8::try_from(p.port).map_err(|_| {
            (
                Stage::ReadyToReceive,
                VerbsFailure::new("port", Some(libc::EINVAL)),
            )
        })?;
        let sgid = u8::try_from(p.sgid_index).map_err(|_| {
            (
                Stage::ReadyToReceive,
                VerbsFailure::new("GID index", Some(libc::EINVAL)),
            )
        })?;
        let mut a = ibv_qp_attr {
            qp_state: IBV_QPS_RTR,
            path_mtu: mtu,
            dest_qp_num: p.dest_qpn,
            rq_psn: p.dest_psn,
            max_dest_rd_atomic: 1,
            min_rnr_timer: 12,
            ah_attr: ibv_ah_attr {
                grh: ibv_global_route {
                    dgid: ibv_gid {
                        raw: p.dgid.octets(),
                    },
                    flow_label: 0,
                    sgid_index: sgid,
                    hop_limit: 64,
                    traffic_class: 0,
                },
                dlid: p.dest_lid,
                sl: 0,
                src_path_bits: 0,
                static_rate: 0,
                // RoCE always needs the GRH; InfiniBand within a subnet uses the LID.
                is_global: u8::from(!self.infiniband),
                port_num: port,
            },
            ..Default::default()
        };
        // SAFETY: qp is live; a is a valid attribute struct. For RoCE the
        // kernel resolves the destination MAC here (ib_resolve_eth_dmac).
        let rc = unsafe {
            (l.modify_qp)(
                self.qp,
                &mut a,
                IBV_QP_STATE
                    | IBV_QP_AV
                    | IBV_QP_PATH_MTU
                    | IBV_QP_DEST_QPN
                    | IBV_QP_RQ_PSN
                    | IBV_QP_MAX_DEST_RD_ATOMIC
                    | IBV_QP_MIN_RNR_TIMER,
            )
        };
        if rc != 0 {
            return Err((
                Stage::ReadyToReceive,
                VerbsFailure::new("ibv_modify_qp(RTR)", Some(rc)),
            ));
        }
        let mut a = ibv_qp_attr {
            qp_state: IBV_QPS_RTS,
            // 4.096 us * 2^14 = 67 ms per try (perftest's timeout), 6 retries:
            // status 12 after about half a second on hardware. Not perftest's 7:
            // the kernel's Soft-RoCE driver (rxe_comp.c) never counts down a
            // retry count of 7, so a broken path would retry forever there
            // instead of failing with the seed's own error (docs/vm.md).
            timeout: 14,
            retry_cnt: 6,
            rnr_retry: 7,
            sq_psn: self.psn,
            max_rd_atomic: 1,
            ..Default::default()
        };
        // SAFETY: as above.
        let rc = unsafe {
            (l.modify_qp)(
                self.qp,
                &mut a,
                IBV_QP_STATE
                    | IBV_QP_TIMEOUT
                    | IBV_QP_RETRY_CNT
                    | IBV_QP_RNR_RETRY
                    | IBV_QP_SQ_PSN
                    | IBV_QP_MAX_QP_RD_ATOMIC,
            )
        };
        if rc != 0 {
            return Err((
                Stage::ReadyToSend,
                VerbsFailure::new("ibv_modify_qp(RTS)", Some(rc)),
            ));
        }
        Ok(())
    }

    fn write_local(&mut self, off: usize, data: &[u8]) {
        let end = off.saturating_add(data.len()).min(self.buf.len());
        if off < end {
            self.buf[off..end].copy_from_slice(&data[..end - off]);
        }
    }

    fn read_local(&self, off: usize, len: usize) -> Vec<u8> {
        let end = off.saturating_add(len).min(self.buf.len());
        if off >= end {
            return Vec::new();
        }
        // The device writes this memory behind the compiler's back: read it
        // with volatile loads so no stale copy is used.
        (off..end)
            // SAFETY: in bounds of the live buffer.
            .map(|i| unsafe { std::ptr::read_volatile(self.buf.as_ptr().add(i)) })
            .collect()
    }

    fn post_recv(
        &mut self,
        wr_id: u64,
        off: usize,
        len: usize,
    ) -> std::result::Result<(), VerbsFailure> {
        let mut sge = self.sge(off, len)?;
        let mut wr = ibv_recv_wr {
            wr_id,
            next: std::ptr::null_mut(),
            sg_list: &mut sge,
            num_sge: 1,
        };
        let mut bad = std::ptr::null_mut();
        // SAFETY: qp is live; ops.post_recv is the provider's function (what the
        // header's inline ibv_post_recv calls); wr and sge live across the call.
        let rc = unsafe {
            let ctx = (*self.qp).context;
            match (*ctx).ops.post_recv {
                Some(f) => f(self.qp, &mut wr, &mut bad),
                None => libc::EOPNOTSUPP,
            }
        };
        if rc != 0 {
            return Err(VerbsFailure::new("ibv_post_recv", Some(rc)));
        }
        Ok(())
    }

    fn post_send(
        &mut self,
        wr_id: u64,
        off: usize,
        len: usize,
    ) -> std::result::Result<(), VerbsFailure> {
        self.post(wr_id, off, len, IBV_WR_SEND, 0, 0, "ibv_post_send")
    }

    fn post_write(
        &mut self,
        wr_id: u64,
        off: usize,
        len: usize,
        raddr: u64,
        rkey: u32,
    ) -> std::result::Result<(), VerbsFailure> {
        self.post(
            wr_id,
            off,
            len,
            IBV_WR_RDMA_WRITE,
            raddr,
            rkey,
            "ibv_post_send(RDMA_WRITE)",
        )
    }

    fn poll(&mut self) -> std::result::Result<Option<Completion>, VerbsFailure> {
        let mut wc = ibv_wc::default();
        // SAFETY: cq is live; ops.poll_cq is what the inline ibv_poll_cq calls.
        let n = unsafe {
            let ctx = (*self.cq).context;
            match (*ctx).ops.poll_cq {
                Some(f) => f(self.cq.cast(), 1, &mut wc),
                None => -libc::EOPNOTSUPP,
            }
        };
        match n {
            0 => Ok(None),
            1 => Ok(Some(Completion {
                wr_id: wc.wr_id,
                status: wc.status,
                vendor_err: wc.vendor_err,
                byte_len: wc.byte_len,
            })),
            _ => Err(VerbsFailure::new(
                "ibv_poll_cq",
                Some(if n < 0 { -n } else { libc::EIO }),
            )),
        }
    }
}

impl IbvQueue {
    fn sge(&self, off: usize, len: usize) -> std::result::Result<ibv_sge, VerbsFailure> {
        if off.checked_add(len).is_none_or(|e| e > self.buf.len()) {
            return Err(VerbsFailure::new(
                "work request outside the buffer",
                Some(libc::EINVAL),
            ));
        }
        Ok(ibv_sge {
            addr: self.addr(off),
            length: u32::try_from(len)
                .map_err(|_| VerbsFailure::new("length", Some(libc::EINVAL)))?,
            // SAFETY: mr is live after setup.
            lkey: unsafe { (*self.mr).lkey },
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn post(
        &mut self,
        wr_id: u64,
        off: usize,
        len: usize,
        opcode: u32,
        raddr: u64,
        rkey: u32,
        call: &str,
    ) -> std::result::Result<(), VerbsFailure> {
        let mut sge = self.sge(off, len)?;
        let mut wr = ibv_send_wr {
            wr_id,
            next: std::ptr::null_mut(),
            sg_list: &mut sge,
            num_sge: 1,
            opcode,
            send_flags: IBV_SEND_SIGNALED,
            imm_data: 0,
            remote_addr: raddr,
            rkey,
            _wr_rest: [0; 5],
            _qp_type: 0,
            _bind_mw: [0; 6],
        };
        let mut bad = std::ptr::null_mut();
        // SAFETY: qp is live; ops.post_send is what the inline ibv_post_send
        // calls; wr and sge live across the call.
        let rc = unsafe {
            let ctx = (*self.qp).context;
            match (*ctx).ops.post_send {
                Some(f) => f(self.qp, &mut wr, &mut bad),
                None => libc::EOPNOTSUPP,
            }
        };
        if rc != 0 {
            return Err(VerbsFailure::new(call, Some(rc)));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With the real libibverbs on a host without RDMA, the backend answers
    /// NoRdma with the specific reason before anything else happens.
    #[test]
    fn the_real_backend_says_why_rdma_is_unavailable() {
        let b = VerbsBackend::new(VerbsOptions::default());
        match b.available() {
            Ok(()) => assert!(
                std::path::Path::new("/sys/class/infiniband_verbs").exists(),
                "devices listed without kernel RDMA support"
            ),
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::NoRdma, "{e}");
                if !std::path::Path::new("/sys/class/infiniband_verbs").exists() {
                    assert!(e.message().starts_with("no_kernel_support:"), "{e}");
                    assert_eq!(e.errno_value(), Some(libc::ENOSYS));
                }
            }
        }
        let b =
            VerbsBackend::new(VerbsOptions::default().with_library("/nonexistent/libibverbs.so.1"));
        let e = b.available().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NoRdma);
        assert!(e.message().starts_with("no_library:"), "{e}");
    }
}
