//! `verbs-sysfs-mismatch`: the verbs view compared with the sysfs view, on the
//! doctor's fixture snapshots (the bad fixture is built here, from healthy.json).

use crate::doctor_support;

use roce_net::*;

/// healthy.json with the verbs view libibverbs would give for it, made from
/// its own sysfs view.
fn with_matching_verbs() -> HostState {
    let mut st = doctor_support::load("healthy.json");
    let devices = st
        .rdma
        .iter()
        .map(|d| VerbsDevice {
            name: d.name.clone(),
            node_guid: d.node_guid.clone(),
            fw_ver: d.fw_ver.clone(),
            error: None,
            ports: d
                .ports
                .iter()
                .map(|p| VerbsPort {
                    port: p.port,
                    state: p.state.clone().unwrap_or_else(|| "".into()),
                    phys_state: p.phys_state.clone(),
                    link_layer: p.link_layer.clone(),
                    active_mtu: p.active_mtu,
                    max_mtu: Some(4096),
                    gid_tbl_len: 256,
                    gids: p
                        .gids
                        .iter()
                        .map(|g| VerbsGid {
                            index: g.index,
                            gid: g.gid,
                            gid_type: g.gid_type.clone(),
                            ndev_ifindex: None,
                        })
                        .collect(),
                })
                .collect(),
        })
        .collect();
    st.verbs = Some(VerbsView {
        library: Some("libibverbs.so.1".into()),
        gid_query: Some(GidQuery::Table),
        unavailable: None,
        devices,
        warnings: Vec::new(),
    });
    st
}

fn mismatches(st: &HostState) -> Vec<Finding> {
    roce_net::doctor(st)
        .into_iter()
        .filter(|f| f.id == "verbs-sysfs-mismatch")
        .collect()
}

#[test]
fn matching_views_are_silent_and_no_view_is_not_checked() {
    assert!(mismatches(&with_matching_verbs()).is_empty());
    assert!(mismatches(&doctor_support::load("healthy.json")).is_empty());
}

#[test]
fn the_bad_fixture_shows_a_missing_device_and_a_differing_gid() {
    let mut st = with_matching_verbs();
    let v = st.verbs.as_mut().unwrap();
    // mlx5_3's provider is missing; mlx5_0's GID 3 is RoCE v1 to libibverbs.
    v.devices.retain(|d| d.name != "mlx5_3");
    let g = v.devices[0].ports[0]
        .gids
        .iter_mut()
        .find(|g| g.index == 3)
        .unwrap();
    g.gid_type = Some(GidType::RoceV1);
    let st = doctor_support::golden("verbs-sysfs-mismatch.bad.json", &st);
    let f = mismatches(&st);
    assert_eq!(f.len(), 2, "{f:#?}");
    let missing = f
        .iter()
        .find(|x| x.subject.device.as_deref() == Some("mlx5_3"))
        .unwrap();
    assert_eq!(missing.severity, Severity::Error);
    assert!(
        missing.message.contains("libibverbs does not list it"),
        "{}",
        missing.message
    );
    let gid = f
        .iter()
        .find(|x| x.subject.device.as_deref() == Some("mlx5_0"))
        .unwrap();
    assert_eq!(gid.severity, Severity::Warning);
    assert_eq!(
        gid.evidence["differences"][0],
        "GID 3: sysfs ::ffff:198.18.0.11 v2, verbs ::ffff:198.18.0.11 v1"
    );
}

#[test]
fn devices_libibverbs_cannot_use_are_an_error_with_the_reason() {
    let mut st = doctor_support::load("healthy.json");
    st.verbs = Some(VerbsView::unavailable(
        NoRdmaReason::NoDeviceFiles,
        "mlx5_0 exists but /dev/infiniband has no character devices",
    ));
    let f = mismatches(&st);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].severity, Severity::Error);
    assert_eq!(f[0].evidence["reason"], "no_device_files");
    assert!(f[0].message.contains("/dev/infiniband"), "{}", f[0].message);
    // A build without the feature says nothing about the host.
    st.verbs = Some(VerbsView::unavailable(
        NoRdmaReason::NotBuilt,
        "built without verbs",
    ));
    assert!(mismatches(&st).is_empty());
}

#[test]
fn port_state_and_mtu_differences_are_reported() {
    let mut st = with_matching_verbs();
    let p = &mut st.verbs.as_mut().unwrap().devices[1].ports[0];
    p.state = "DOWN".into();
    p.active_mtu = Some(1024);
    let f = mismatches(&st);
    assert_eq!(f.len(), 1);
    let d = f[0].evidence["differences"].as_array().unwrap();
    assert!(
        d.iter().any(|x| x == "state: sysfs ACTIVE, verbs DOWN"),
        "{d:?}"
    );
    assert!(
        d.iter()
            .any(|x| x == "active MTU: 4096 from the netdev MTU, verbs reports 1024"),
        "{d:?}"
    );
}

#[test]
fn snapshots_without_a_verbs_view_keep_their_json() {
    let st = doctor_support::load("healthy.json");
    assert!(!st.to_json().contains("\"verbs\""));
    let back = HostState::from_json(&with_matching_verbs().to_json()).unwrap();
    assert_eq!(back, with_matching_verbs());
}
