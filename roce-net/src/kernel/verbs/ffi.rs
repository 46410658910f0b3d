//! The few libibverbs C types and constants roce-net uses, written by hand from
//! rdma-core's `libibverbs/verbs.h` (rdma-core 44, Debian 12; these layouts have
//! been stable since the 1.1 ABI). The `layout_matches_verbs_h` test compiles a C
//! program against the installed header and compares every size and offset used
//! here, so a mismatch fails the build's tests rather than corrupting memory.
//!
//! Only fields roce-net reads or writes are named; the rest is padding of the
//! exact C size. Opaque objects (`ibv_pd`, `ibv_cq`, `ibv_device`) are `c_void`.
#![allow(non_camel_case_types, dead_code)]

use std::ffi::{c_char, c_int, c_uint, c_void};

/// `union ibv_gid` (16 bytes; 8-byte aligned because of its `__be64` members).
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ibv_gid {
    pub raw: [u8; 16],
}

/// `struct ibv_gid_entry`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_gid_entry {
    pub gid: ibv_gid,
    pub gid_index: u32,
    pub port_num: u32,
    pub gid_type: u32,
    pub ndev_ifindex: u32,
}

/// `enum ibv_gid_type`.
pub const IBV_GID_TYPE_IB: u32 = 0;
/// RoCE v1.
pub const IBV_GID_TYPE_ROCE_V1: u32 = 1;
/// RoCE v2.
pub const IBV_GID_TYPE_ROCE_V2: u32 = 2;

/// `struct ibv_device_attr` (only `fw_ver` and `phys_port_cnt` are read).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ibv_device_attr {
    pub fw_ver: [c_char; 64],
    pub node_guid: u64,
    pub sys_image_guid: u64,
    pub max_mr_size: u64,
    pub page_size_cap: u64,
    pub vendor_id: u32,
    pub vendor_part_id: u32,
    pub hw_ver: u32,
    pub ints: [c_int; 29],
    pub max_pkeys: u16,
    pub local_ca_ack_delay: u8,
    pub phys_port_cnt: u8,
}

/// `struct ibv_port_attr`. `ibv_query_port` (the exported symbol, not the
/// header's inline wrapper) fills the `_compat_ibv_port_attr` prefix; the tail
/// is zeroed before the call, so reading it is safe on every version.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct ibv_port_attr {
    pub state: u32,
    pub max_mtu: u32,
    pub active_mtu: u32,
    pub gid_tbl_len: c_int,
    pub port_cap_flags: u32,
    pub max_msg_sz: u32,
    pub bad_pkey_cntr: u32,
    pub qkey_viol_cntr: u32,
    pub pkey_tbl_len: u16,
    pub lid: u16,
    pub sm_lid: u16,
    pub lmc: u8,
    pub max_vl_num: u8,
    pub sm_sl: u8,
    pub subnet_timeout: u8,
    pub init_type_reply: u8,
    pub active_width: u8,
    pub active_speed: u8,
    pub phys_state: u8,
    pub link_layer: u8,
    pub flags: u8,
    pub port_cap_flags2: u16,
    /// Room for fields newer rdma-core versions append (`active_speed_ex`, ...).
    pub _reserved: [u32; 8],
}

/// `enum ibv_port_state`.
pub const IBV_PORT_ACTIVE: u32 = 4;
/// `IBV_LINK_LAYER_INFINIBAND`.
pub const IBV_LINK_LAYER_INFINIBAND: u8 = 1;
/// `IBV_LINK_LAYER_ETHERNET`.
pub const IBV_LINK_LAYER_ETHERNET: u8 = 2;

/// `struct ibv_context_ops`: 32 function pointers; roce-net calls the three the
/// header's inline `ibv_poll_cq`, `ibv_post_send` and `ibv_post_recv` call.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ibv_context_ops {
    pub _before_poll_cq: [*const c_void; 11],
    pub poll_cq: Option<unsafe extern "C" fn(*mut c_void, c_int, *mut ibv_wc) -> c_int>,
    pub _between: [*const c_void; 13],
    pub post_send:
        Option<unsafe extern "C" fn(*mut ibv_qp, *mut ibv_send_wr, *mut *mut ibv_send_wr) -> c_int>,
    pub post_recv:
        Option<unsafe extern "C" fn(*mut ibv_qp, *mut ibv_recv_wr, *mut *mut ibv_recv_wr) -> c_int>,
    pub _after: [*const c_void; 5],
}

/// `struct ibv_context` (the prefix up to `ops`, which is all roce-net reads).
#[repr(C)]
pub struct ibv_context {
    pub device: *mut c_void,
    pub ops: ibv_context_ops,
    pub cmd_fd: c_int,
    pub async_fd: c_int,
    pub num_comp_vectors: c_int,
}

/// `struct ibv_cq` (the prefix up to `context`).
#[repr(C)]
pub struct ibv_cq {
    pub context: *mut ibv_context,
}

/// `struct ibv_mr`.
#[repr(C)]
pub struct ibv_mr {
    pub context: *mut ibv_context,
    pub pd: *mut c_void,
    pub addr: *mut c_void,
    pub length: usize,
    pub handle: u32,
    pub lkey: u32,
    pub rkey: u32,
}

/// `struct ibv_qp` (the prefix up to `qp_type`).
#[repr(C)]
pub struct ibv_qp {
    pub context: *mut ibv_context,
    pub qp_context: *mut c_void,
    pub pd: *mut c_void,
    pub send_cq: *mut c_void,
    pub recv_cq: *mut c_void,
    pub srq: *mut c_void,
    pub handle: u32,
    pub qp_num: u32,
    pub state: u32,
    pub qp_type: u32,
}

/// `struct ibv_qp_cap`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct ibv_qp_cap {
    pub max_send_wr: u32,
    pub max_recv_wr: u32,
    pub max_send_sge: u32,
    pub max_recv_sge: u32,
    pub max_inline_data: u32,
}

/// `struct ibv_qp_init_attr`.
#[repr(C)]
pub struct ibv_qp_init_attr {
    pub qp_context: *mut c_void,
    pub send_cq: *mut c_void,
    pub recv_cq: *mut c_void,
    pub srq: *mut c_void,
    pub cap: ibv_qp_cap,
    pub qp_type: u32,
    pub sq_sig_all: c_int,
}

/// `IBV_QPT_RC`.
pub const IBV_QPT_RC: u32 = 2;

/// `struct ibv_global_route`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct ibv_global_route {
    pub dgid: ibv_gid,
    pub flow_label: u32,
    pub sgid_index: u8,
    pub hop_limit: u8,
    pub traffic_class: u8,
}

/// `struct ibv_ah_attr`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct ibv_ah_attr {
    pub grh: ibv_global_route,
    pub dlid: u16,
    pub sl: u8,
    pub src_path_bits: u8,
    pub static_rate: u8,
    pub is_global: u8,
    pub port_num: u8,
}

/// `struct ibv_qp_attr`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct ibv_qp_attr {
    pub qp_state: u32,
    pub cur_qp_state: u32,
    pub path_mtu: u32,
    pub path_mig_state: u32,
    pub qkey: u32,
    pub rq_psn: u32,
    pub sq_psn: u32,
    pub dest_qp_num: u32,
    pub qp_access_flags: c_uint,
    pub cap: ibv_qp_cap,
    pub ah_attr: ibv_ah_attr,
    pub alt_ah_attr: ibv_ah_attr,
    pub pkey_index: u16,
    pub alt_pkey_index: u16,
    pub en_sqd_async_notify: u8,
    pub sq_draining: u8,
    pub max_rd_atomic: u8,
    pub max_dest_rd_atomic: u8,
    pub min_rnr_timer: u8,
    pub port_num: u8,
    pub timeout: u8,
    pub retry_cnt: u8,
    pub rnr_retry: u8,
    pub alt_port_num: u8,
    pub alt_timeout: u8,
    pub rate_limit: u32,
}

/// `enum ibv_qp_state`.
pub const IBV_QPS_INIT: u32 = 1;
/// Ready to receive.
pub const IBV_QPS_RTR: u32 = 2;
/// Ready to send.
pub const IBV_QPS_RTS: u32 = 3;

/// `enum ibv_qp_attr_mask` bits.
pub const IBV_QP_STATE: c_int = 1 << 0;
pub const IBV_QP_ACCESS_FLAGS: c_int = 1 << 3;
pub const IBV_QP_PKEY_INDEX: c_int = 1 << 4;
pub const IBV_QP_PORT: c_int = 1 << 5;
pub const IBV_QP_AV: c_int = 1 << 7;
pub const IBV_QP_PATH_MTU: c_int = 1 << 8;
pub const IBV_QP_TIMEOUT: c_int = 1 << 9;
pub const IBV_QP_RETRY_CNT: c_int = 1 << 10;
pub const IBV_QP_RNR_RETRY: c_int = 1 << 11;
pub const IBV_QP_RQ_PSN: c_int = 1 << 12;
pub const IBV_QP_MAX_QP_RD_ATOMIC: c_int = 1 << 13;
pub const IBV_QP_MIN_RNR_TIMER: c_int = 1 << 15;
pub const IBV_QP_SQ_PSN: c_int = 1 << 16;
pub const IBV_QP_MAX_DEST_RD_ATOMIC: c_int = 1 << 17;
pub const IBV_QP_DEST_QPN: c_int = 1 << 20;

/// `enum ibv_access_flags` bits.
pub const IBV_ACCESS_LOCAL_WRITE: c_int = 1;
pub const IBV_ACCESS_REMOTE_WRITE: c_int = 1 << 1;
pub const IBV_ACCESS_REMOTE_READ: c_int = 1 << 2;

/// `struct ibv_sge`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct ibv_sge {
    pub addr: u64,
    pub length: u32,
    pub lkey: u32,
}

/// `struct ibv_send_wr`: the `wr.rdma` member of the `wr` union is named, the
/// remaining unions are padding of their C size.
#[repr(C)]
pub struct ibv_send_wr {
    pub wr_id: u64,
    pub next: *mut ibv_send_wr,
    pub sg_list: *mut ibv_sge,
    pub num_sge: c_int,
    pub opcode: u32,
    pub send_flags: c_uint,
    pub imm_data: u32,
    /// `wr.rdma.remote_addr`.
    pub remote_addr: u64,
    /// `wr.rdma.rkey`.
    pub rkey: u32,
    /// Rest of the `wr` union (its largest member, `atomic`, is 32 bytes).
    pub _wr_rest: [u32; 5],
    /// `qp_type` union.
    pub _qp_type: u32,
    /// The anonymous `bind_mw`/`tso` union (48 bytes).
    pub _bind_mw: [u64; 6],
}

/// `enum ibv_wr_opcode`.
pub const IBV_WR_RDMA_WRITE: u32 = 0;
/// Send.
pub const IBV_WR_SEND: u32 = 2;
/// `IBV_SEND_SIGNALED`.
pub const IBV_SEND_SIGNALED: c_uint = 1 << 1;

/// `struct ibv_recv_wr`.
#[repr(C)]
pub struct ibv_recv_wr {
    pub wr_id: u64,
    pub next: *mut ibv_recv_wr,
    pub sg_list: *mut ibv_sge,
    pub num_sge: c_int,
}

/// `struct ibv_wc`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct ibv_wc {
    pub wr_id: u64,
    pub status: u32,
    pub opcode: u32,
    pub vendor_err: u32,
    pub byte_len: u32,
    pub imm_data: u32,
    pub qp_num: u32,
    pub src_qp: u32,
    pub wc_flags: c_uint,
    pub pkey_index: u16,
    pub slid: u16,
    pub sl: u8,
    pub dlid_path_bits: u8,
}

/// `enum ibv_wc_opcode`: `IBV_WC_SEND`.
pub const IBV_WC_SEND: u32 = 0;
/// `IBV_WC_RDMA_WRITE`.
pub const IBV_WC_RDMA_WRITE: u32 = 1;
/// `IBV_WC_RECV`.
pub const IBV_WC_RECV: u32 = 1 << 7;

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    /// Every (C expression, Rust value) pair the hand-written layouts rely on.
    fn rust_layout() -> Vec<(&'static str, usize)> {
        vec![
            ("sizeof(union ibv_gid)", size_of::<ibv_gid>()),
            ("sizeof(struct ibv_gid_entry)", size_of::<ibv_gid_entry>()),
            (
                "offsetof(struct ibv_gid_entry, gid_index)",
                offset_of!(ibv_gid_entry, gid_index),
            ),
            (
                "offsetof(struct ibv_gid_entry, gid_type)",
                offset_of!(ibv_gid_entry, gid_type),
            ),
            (
                "offsetof(struct ibv_gid_entry, ndev_ifindex)",
                offset_of!(ibv_gid_entry, ndev_ifindex),
            ),
            (
                "sizeof(struct ibv_device_attr)",
                size_of::<ibv_device_attr>(),
            ),
            (
                "offsetof(struct ibv_device_attr, node_guid)",
                offset_of!(ibv_device_attr, node_guid),
            ),
            (
                "offsetof(struct ibv_device_attr, max_pkeys)",
                offset_of!(ibv_device_attr, max_pkeys),
            ),
            (
                "offsetof(struct ibv_device_attr, phys_port_cnt)",
                offset_of!(ibv_device_attr, phys_port_cnt),
            ),
            (
                "offsetof(struct ibv_port_attr, active_mtu)",
                offset_of!(ibv_port_attr, active_mtu),
            ),
            (
                "offsetof(struct ibv_port_attr, gid_tbl_len)",
                offset_of!(ibv_port_attr, gid_tbl_len),
            ),
            (
                "offsetof(struct ibv_port_attr, lid)",
                offset_of!(ibv_port_attr, lid),
            ),
            (
                "offsetof(struct ibv_port_attr, phys_state)",
                offset_of!(ibv_port_attr, phys_state),
            ),
            (
                "offsetof(struct ibv_port_attr, link_layer)",
                offset_of!(ibv_port_attr, link_layer),
            ),
            (
                "offsetof(struct ibv_port_attr, port_cap_flags2)",
                offset_of!(ibv_port_attr, port_cap_flags2),
            ),
            (
                "sizeof(struct ibv_context_ops)",
                size_of::<ibv_context_ops>(),
            ),
            (
                "offsetof(struct ibv_context_ops, poll_cq)",
                offset_of!(ibv_context_ops, poll_cq),
            ),
            (
                "offsetof(struct ibv_context_ops, post_send)",
                offset_of!(ibv_context_ops, post_send),
            ),
            (
                "offsetof(struct ibv_context_ops, post_recv)",
                offset_of!(ibv_context_ops, post_recv),
            ),
            (
                "offsetof(struct ibv_context, ops)",
                offset_of!(ibv_context, ops),
            ),
            (
                "offsetof(struct ibv_cq, context)",
                offset_of!(ibv_cq, context),
            ),
            ("offsetof(struct ibv_mr, lkey)", offset_of!(ibv_mr, lkey)),
            ("offsetof(struct ibv_mr, rkey)", offset_of!(ibv_mr, rkey)),
            (
                "offsetof(struct ibv_qp, context)",
                offset_of!(ibv_qp, context),
            ),
            (
                "offsetof(struct ibv_qp, qp_num)",
                offset_of!(ibv_qp, qp_num),
            ),
            ("sizeof(struct ibv_qp_cap)", size_of::<ibv_qp_cap>()),
            (
                "sizeof(struct ibv_qp_init_attr)",
                size_of::<ibv_qp_init_attr>(),
            ),
            (
                "offsetof(struct ibv_qp_init_attr, cap)",
                offset_of!(ibv_qp_init_attr, cap),
            ),
            (
                "offsetof(struct ibv_qp_init_attr, qp_type)",
                offset_of!(ibv_qp_init_attr, qp_type),
            ),
            (
                "offsetof(struct ibv_qp_init_attr, sq_sig_all)",
                offset_of!(ibv_qp_init_attr, sq_sig_all),
            ),
            (
                "sizeof(struct ibv_global_route)",
                size_of::<ibv_global_route>(),
            ),
            (
                "offsetof(struct ibv_global_route, sgid_index)",
                offset_of!(ibv_global_route, sgid_index),
            ),
            (
                "offsetof(struct ibv_global_route, hop_limit)",
                offset_of!(ibv_global_route, hop_limit),
            ),
            ("sizeof(struct ibv_ah_attr)", size_of::<ibv_ah_attr>()),
            (
                "offsetof(struct ibv_ah_attr, dlid)",
                offset_of!(ibv_ah_attr, dlid),
            ),
            (
                "offsetof(struct ibv_ah_attr, is_global)",
                offset_of!(ibv_ah_attr, is_global),
            ),
            (
                "offsetof(struct ibv_ah_attr, port_num)",
                offset_of!(ibv_ah_attr, port_num),
            ),
            ("sizeof(struct ibv_qp_attr)", size_of::<ibv_qp_attr>()),
            (
                "offsetof(struct ibv_qp_attr, path_mtu)",
                offset_of!(ibv_qp_attr, path_mtu),
            ),
            (
                "offsetof(struct ibv_qp_attr, rq_psn)",
                offset_of!(ibv_qp_attr, rq_psn),
            ),
            (
                "offsetof(struct ibv_qp_attr, sq_psn)",
                offset_of!(ibv_qp_attr, sq_psn),
            ),
            (
                "offsetof(struct ibv_qp_attr, dest_qp_num)",
                offset_of!(ibv_qp_attr, dest_qp_num),
            ),
            (
                "offsetof(struct ibv_qp_attr, qp_access_flags)",
                offset_of!(ibv_qp_attr, qp_access_flags),
            ),
            (
                "offsetof(struct ibv_qp_attr, ah_attr)",
                offset_of!(ibv_qp_attr, ah_attr),
            ),
            (
                "offsetof(struct ibv_qp_attr, pkey_index)",
                offset_of!(ibv_qp_attr, pkey_index),
            ),
            (
                "offsetof(struct ibv_qp_attr, max_rd_atomic)",
                offset_of!(ibv_qp_attr, max_rd_atomic),
            ),
            (
                "offsetof(struct ibv_qp_attr, max_dest_rd_atomic)",
                offset_of!(ibv_qp_attr, max_dest_rd_atomic),
            ),
            (
                "offsetof(struct ibv_qp_attr, min_rnr_timer)",
                offset_of!(ibv_qp_attr, min_rnr_timer),
            ),
            (
                "offsetof(struct ibv_qp_attr, port_num)",
                offset_of!(ibv_qp_attr, port_num),
            ),
            (
                "offsetof(struct ibv_qp_attr, timeout)",
                offset_of!(ibv_qp_attr, timeout),
            ),
            (
                "offsetof(struct ibv_qp_attr, retry_cnt)",
                offset_of!(ibv_qp_attr, retry_cnt),
            ),
            (
                "offsetof(struct ibv_qp_attr, rnr_retry)",
                offset_of!(ibv_qp_attr, rnr_retry),
            ),
            ("sizeof(struct ibv_sge)", size_of::<ibv_sge>()),
            ("sizeof(struct ibv_send_wr)", size_of::<ibv_send_wr>()),
            (
                "offsetof(struct ibv_send_wr, sg_list)",
                offset_of!(ibv_send_wr, sg_list),
            ),
            (
                "offsetof(struct ibv_send_wr, num_sge)",
                offset_of!(ibv_send_wr, num_sge),
            ),
            (
                "offsetof(struct ibv_send_wr, opcode)",
                offset_of!(ibv_send_wr, opcode),
            ),
            (
                "offsetof(struct ibv_send_wr, send_flags)",
                offset_of!(ibv_send_wr, send_flags),
            ),
            (
                "offsetof(struct ibv_send_wr, wr.rdma.remote_addr)",
                offset_of!(ibv_send_wr, remote_addr),
            ),
            (
                "offsetof(struct ibv_send_wr, wr.rdma.rkey)",
                offset_of!(ibv_send_wr, rkey),
            ),
            ("sizeof(struct ibv_recv_wr)", size_of::<ibv_recv_wr>()),
            (
                "offsetof(struct ibv_recv_wr, num_sge)",
                offset_of!(ibv_recv_wr, num_sge),
            ),
            ("sizeof(struct ibv_wc)", size_of::<ibv_wc>()),
            (
                "offsetof(struct ibv_wc, status)",
                offset_of!(ibv_wc, status),
            ),
            (
                "offsetof(struct ibv_wc, opcode)",
                offset_of!(ibv_wc, opcode),
            ),
            (
                "offsetof(struct ibv_wc, vendor_err)",
                offset_of!(ibv_wc, vendor_err),
            ),
            (
                "offsetof(struct ibv_wc, byte_len)",
                offset_of!(ibv_wc, byte_len),
            ),
            ("IBV_GID_TYPE_ROCE_V2", IBV_GID_TYPE_ROCE_V2 as usize),
            ("IBV_GID_TYPE_ROCE_V1", IBV_GID_TYPE_ROCE_V1 as usize),
            ("IBV_PORT_ACTIVE", IBV_PORT_ACTIVE as usize),
            ("IBV_LINK_LAYER_ETHERNET", IBV_LINK_LAYER_ETHERNET as usize),
            ("IBV_QPT_RC", IBV_QPT_RC as usize),
            ("IBV_QPS_RTR", IBV_QPS_RTR as usize),
            ("IBV_QPS_RTS", IBV_QPS_RTS as usize),
            ("IBV_QP_DEST_QPN", IBV_QP_DEST_QPN as usize),
            (
                "IBV_QP_MAX_DEST_RD_ATOMIC",
                IBV_QP_MAX_DEST_RD_ATOMIC as usize,
            ),
            ("IBV_QP_SQ_PSN", IBV_QP_SQ_PSN as usize),
            ("IBV_QP_MIN_RNR_TIMER", IBV_QP_MIN_RNR_TIMER as usize),
            ("IBV_WR_SEND", IBV_WR_SEND as usize),
            ("IBV_WR_RDMA_WRITE", IBV_WR_RDMA_WRITE as usize),
            ("IBV_SEND_SIGNALED", IBV_SEND_SIGNALED as usize),
            ("IBV_WC_RECV", IBV_WC_RECV as usize),
            ("IBV_WC_RDMA_WRITE", IBV_WC_RDMA_WRITE as usize),
            ("IBV_ACCESS_REMOTE_WRITE", IBV_ACCESS_REMOTE_WRITE as usize),
            ("IBV_WC_RETRY_EXC_ERR", 12),
            ("IBV_WC_RNR_RETRY_EXC_ERR", 13),
            // The Rust port attributes must have room for everything C writes.
            ("(sizeof(struct ibv_port_attr) <= PORT_ATTR_RUST_SIZE)", 1),
        ]
    }

    /// Compile a C program against the installed `<infiniband/verbs.h>` (from
    /// `libibverbs-dev`, installed by scripts/test.sh) that prints each expression,
    /// and compare with the Rust layout.
    #[test]
    fn layout_matches_verbs_h() {
        let pairs = rust_layout();
        let dir = tempfile::tempdir().unwrap();
        let mut c = format!(
            "#include <stdio.h>\n#include <stddef.h>\n#include <infiniband/verbs.h>\n\
             #define PORT_ATTR_RUST_SIZE {}\nint main(void){{\n",
            size_of::<ibv_port_attr>()
        );
        for (expr, _) in &pairs {
            c.push_str(&format!("printf(\"%zu\\n\", (size_t)({expr}));\n"));
        }
        c.push_str("return 0;}\n");
        let src = dir.path().join("layout.c");
        let bin = dir.path().join("layout");
        std::fs::write(&src, c).unwrap();
        let out = std::process::Command::new("cc")
            .arg(&src)
            .arg("-o")
            .arg(&bin)
            .output()
            .expect("running cc (install gcc)");
        assert!(
            out.status.success(),
            "compiling against <infiniband/verbs.h> failed (install libibverbs-dev): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let run = std::process::Command::new(&bin).output().unwrap();
        let text = String::from_utf8(run.stdout).unwrap();
        let c_values: Vec<usize> = text.lines().map(|l| l.parse().unwrap()).collect();
        assert_eq!(c_values.len(), pairs.len());
        let wrong: Vec<String> = pairs
            .iter()
            .zip(&c_values)
            .filter(|((_, r), c)| r != *c)
            .map(|((e, r), c)| format!("{e}: C {c}, Rust {r}"))
            .collect();
        assert!(wrong.is_empty(), "layout differs from verbs.h: {wrong:#?}");
    }
}
