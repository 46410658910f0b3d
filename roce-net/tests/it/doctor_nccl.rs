//! NCCL advice from the GID tables in the doctor fixtures.

use crate::doctor_support;

use doctor_support::{healthy, load};

#[test]
fn healthy_host_gets_exact_hca_list_gid_index_and_socket_ifname() {
    let s = load("healthy.json");
    let a = roce_net::nccl_env(&s);
    let hca = a.get("NCCL_IB_HCA").unwrap();
    assert_eq!(
        hca.value.as_deref(),
        Some("=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1")
    );
    assert!(hca.reason.contains("exactly"), "{}", hca.reason);
    let gid = a.get("NCCL_IB_GID_INDEX").unwrap();
    assert_eq!(gid.value.as_deref(), Some("3"));
    let sock = a.get("NCCL_SOCKET_IFNAME").unwrap();
    assert_eq!(sock.value.as_deref(), Some("=eno1"));
    assert!(sock.reason.contains("default route"), "{}", sock.reason);
    assert!(a.get("NCCL_IB_ROCE_VERSION_NUM").is_none());
    assert!(a.get("NCCL_IB_TC").is_none());
    assert!(a.notes.iter().any(|n| n.contains("NCCL_IB_TIMEOUT")));
    assert_eq!(
        a.env_lines(),
        vec![
            "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1",
            "NCCL_IB_GID_INDEX=3",
            "NCCL_SOCKET_IFNAME==eno1"
        ]
    );
}

#[test]
fn inconsistent_gid_index_leaves_it_unset_and_recommends_no_no_op() {
    // mlx5_1's v2 GID sits at 5 (an IPv6 address came first); NCCL 2.21+ picks it
    // by itself, so only a note about older releases is left: the former advice
    // (NCCL_IB_ROCE_VERSION_NUM=2, NCCL_IB_ADDR_FAMILY=AF_INET) were NCCL's
    // defaults and changed nothing.
    let s = load("gid-index-inconsistent.bad.json");
    let a = roce_net::nccl_env(&s);
    let gid = a.get("NCCL_IB_GID_INDEX").unwrap();
    assert_eq!(gid.value, None);
    assert!(gid.reason.contains("mlx5_1:1=5"), "{}", gid.reason);
    assert!(gid.reason.contains("mlx5_0:1=3"), "{}", gid.reason);
    assert!(gid.reason.contains("before 2.21"), "{}", gid.reason);
    assert!(gid.reason.contains("with nothing set"), "{}", gid.reason);
    assert!(a.get("NCCL_IB_ROCE_VERSION_NUM").is_none());
    assert!(a.get("NCCL_IB_ADDR_FAMILY").is_none());
    let p = a.picks.iter().find(|p| p.port.device == "mlx5_1").unwrap();
    assert_eq!(p.auto_unset.selection, roce_net::Selection::Index(5));
    assert_eq!(p.auto_unset.right, Some(true));
}

#[test]
fn missing_v2_gid_leaves_the_port_out_and_says_what_nccl_would_use() {
    let s = load("gid-rocev2-missing.bad.json");
    let a = roce_net::nccl_env(&s);
    let hca = a.get("NCCL_IB_HCA").unwrap();
    assert_eq!(hca.value.as_deref(), Some("=mlx5_0:1,mlx5_1:1,mlx5_3:1"));
    assert!(
        hca.reason
            .contains("mlx5_2:1: its GID table holds no RoCE v2 GID"),
        "{}",
        hca.reason
    );
    assert!(
        hca.reason.contains("NCCL would use GID 2"),
        "{}",
        hca.reason
    );
    assert_eq!(
        a.get("NCCL_IB_GID_INDEX").unwrap().value.as_deref(),
        Some("3")
    );
    assert!(a.get("NCCL_IB_ADDR_FAMILY").is_none());
}

#[test]
fn down_port_is_left_out_of_the_hca_list() {
    let s = load("port-down.bad.json");
    let a = roce_net::nccl_env(&s);
    let hca = a.get("NCCL_IB_HCA").unwrap();
    assert_eq!(hca.value.as_deref(), Some("=mlx5_0:1,mlx5_1:1,mlx5_2:1"));
    assert!(hca.reason.contains("mlx5_3:1"), "{}", hca.reason);
}

#[test]
fn no_rdma_means_no_hca_and_a_socket_fallback() {
    let s = load("no-rdma-devices.bad.json");
    let a = roce_net::nccl_env(&s);
    assert_eq!(a.get("NCCL_IB_HCA").unwrap().value, None);
    assert!(a.get("NCCL_IB_GID_INDEX").is_none());
    // No default route: the first non-RDMA interface with an IPv4 address.
    let sock = a.get("NCCL_SOCKET_IFNAME").unwrap();
    assert_eq!(sock.value.as_deref(), Some("=veth1"));
    assert!(sock.reason.contains("no default route"), "{}", sock.reason);
}

#[test]
fn default_route_over_an_rdma_nic_is_not_the_socket_interface() {
    let mut b = healthy("gpu1", 11);
    b.0.routes
        .retain(|r| !(r.table == 254 && r.dst.prefix_len() == 0));
    b.route("default via 198.18.0.1 dev ens1");
    let a = roce_net::nccl_env(&b.0);
    let sock = a.get("NCCL_SOCKET_IFNAME").unwrap();
    assert_eq!(sock.value.as_deref(), Some("=eno1"));
    assert!(sock.reason.contains("RDMA NIC ens1"), "{}", sock.reason);
}

#[test]
fn ack_timeouts_are_noted_not_tuned() {
    let s = load("rdma-retransmits.bad.json");
    let a = roce_net::nccl_env(&s);
    assert!(a.get("NCCL_IB_TIMEOUT").is_none());
    assert!(a
        .notes
        .iter()
        .any(|n| n.starts_with("mlx5_0:1 counted ACK timeouts")));
}
