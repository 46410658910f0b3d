//! The NIC-statistics, QoS and link-health checks, each with one fixture that
//! triggers it and the healthy fixture that triggers none. Fixtures live in
//! `tests/fixtures/doctor/` (`healthy-hw.json`, `<id>.bad.json`) and are compared with their builders
//! (a missing one fails; `UPDATE_GOLDEN=1` rewrites them).

use crate::doctor_support;

use doctor_support::{golden, healthy_hw, B};
use roce_net::{Finding, HostState, Severity, Trust};
use serde_json::json;
use std::collections::BTreeSet;

fn fixture(name: &str, b: B) -> HostState {
    golden(name, &b.0)
}

fn ids(f: &[Finding]) -> BTreeSet<&str> {
    f.iter().map(|x| x.id.as_str()).collect()
}

fn only(s: &HostState, id: &str) -> Vec<Finding> {
    let f = roce_net::doctor(s);
    assert_eq!(ids(&f), BTreeSet::from([id]), "{f:#?}");
    f
}

fn base() -> B {
    healthy_hw("gpu1", 11)
}

fn stat(b: &mut B, nic: &str, k: &str, v: u64) {
    b.iface_mut(nic)
        .ethtool_stats
        .as_mut()
        .unwrap()
        .insert(k.into(), v);
}

#[test]
fn healthy_hw_host_has_no_findings() {
    let s = fixture("healthy-hw.json", base());
    let f = roce_net::doctor(&s);
    assert!(f.is_empty(), "{f:#?}");
    // The data is there, and healthy: not merely absent.
    let i = s.interface("ens1").unwrap();
    assert_eq!(i.ethtool_stats.as_ref().unwrap()["rx_discards_phy"], 0);
    assert_eq!(i.qos.as_ref().unwrap().priority_for_tc(106, 0), Some(3));
    // Every new check id is documented and registered.
    for id in [
        "nic-rx-discards",
        "nic-rx-out-of-buffer",
        "nic-phy-errors",
        "pfc-pause-storm",
        "pfc-pause-frames",
        "roce-priority-no-pfc",
        "qos-trust-not-dscp",
        "qos-inconsistent",
        "link-degraded",
        "firmware-differs",
        "udp-mem-low",
    ] {
        assert!(roce_net::CHECK_IDS.contains(&id), "{id}");
    }
}

#[test]
fn rx_discards_phy() {
    let mut b = base();
    stat(&mut b, "ens2", "rx_discards_phy", 48_211);
    let s = fixture("nic-rx-discards.bad.json", b);
    let f = only(&s, "nic-rx-discards");
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].subject.interface.as_deref(), Some("ens2"));
    assert_eq!(f[0].subject.device.as_deref(), Some("mlx5_1"));
    assert_eq!(f[0].evidence["rx_discards_phy"], json!(48_211));
    assert_eq!(f[0].evidence["pfc_enabled"], json!([3]));
}

#[test]
fn rx_out_of_buffer() {
    let mut b = base();
    stat(&mut b, "ens3", "rx_out_of_buffer", 5_000);
    let s = fixture("nic-rx-out-of-buffer.bad.json", b);
    let f = only(&s, "nic-rx-out-of-buffer");
    assert_eq!(f[0].remediation.commands, vec!["ethtool -G ens3 rx 8192"]);
    assert_eq!(
        f[0].remediation.checks,
        vec!["ethtool -g ens3", "ethtool -l ens3"]
    );
}

#[test]
fn phy_errors() {
    let mut b = base();
    stat(&mut b, "ens4", "rx_crc_errors_phy", 17);
    stat(&mut b, "ens4", "rx_symbol_err_phy", 3);
    let s = fixture("nic-phy-errors.bad.json", b);
    let f = only(&s, "nic-phy-errors");
    assert_eq!(
        f[0].evidence["counters"],
        json!({"rx_crc_errors_phy": 17, "rx_symbol_err_phy": 3})
    );
}

#[test]
fn pause_storm() {
    let mut b = base();
    stat(&mut b, "ens1", "tx_pause_storm_warning_events", 2);
    stat(&mut b, "ens1", "tx_pause_storm_error_events", 1);
    let s = fixture("pfc-pause-storm.bad.json", b);
    let f = only(&s, "pfc-pause-storm");
    assert_eq!(f[0].severity, Severity::Error);
    assert_eq!(f[0].evidence["tx_pause_per_priority"], json!({"3": 800}));
}

#[test]
fn pause_frames_on_a_priority_without_pfc_and_heavy_pausing() {
    let mut b = base();
    stat(&mut b, "ens2", "rx_prio0_pause", 4_000);
    stat(&mut b, "ens3", "rx_prio3_pause", 9_000_000);
    let s = fixture("pfc-pause-frames.bad.json", b);
    let f = only(&s, "pfc-pause-frames");
    assert_eq!(f.len(), 2, "{f:#?}");
    let off = f
        .iter()
        .find(|x| x.subject.interface.as_deref() == Some("ens2"))
        .unwrap();
    assert_eq!(off.severity, Severity::Warning);
    assert_eq!(off.evidence["priority"], json!(0));
    let heavy = f
        .iter()
        .find(|x| x.subject.interface.as_deref() == Some("ens3"))
        .unwrap();
    assert_eq!(heavy.severity, Severity::Info);
    assert!(
        heavy.message.contains("from the switch"),
        "{}",
        heavy.message
    );
}

#[test]
fn roce_priority_without_pfc() {
    let mut b = base();
    // On mlx5_0 rdma_cm's TOS is 32 (DSCP 8 -> priority 1), where PFC is off.
    b.port_mut("mlx5_0")
        .rdma_cm
        .as_mut()
        .unwrap()
        .default_roce_tos = Some(32);
    let s = fixture("roce-priority-no-pfc.bad.json", b);
    let f = only(&s, "roce-priority-no-pfc");
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].severity, Severity::Warning);
    assert_eq!(f[0].evidence["priority"], json!(1));
    assert_eq!(f[0].evidence["tos"], json!(32));
}

#[test]
fn trust_pcp_while_rdma_cm_sets_a_dscp() {
    let mut b = base();
    // PCP trust everywhere: consistent, but the DSCP of TOS 106 is ignored and
    // untagged RoCE lands on priority 0, where PFC is off.
    for n in 1..=4 {
        let q = b.iface_mut(&format!("ens{n}")).qos.as_mut().unwrap();
        q.trust = Some(Trust::Pcp);
        q.dscp_prio.clear();
        q.pfc_enabled = Some(vec![0, 3]);
    }
    let s = fixture("qos-trust-not-dscp.bad.json", b);
    let f = only(&s, "qos-trust-not-dscp");
    assert_eq!(f.len(), 4);
    assert_eq!(f[0].evidence["dscp"], json!(26));
}

#[test]
fn qos_differs_between_nics() {
    let mut b = base();
    // ens4 also has PFC on priority 4; its RoCE priority (3) keeps PFC.
    b.iface_mut("ens4").qos.as_mut().unwrap().pfc_enabled = Some(vec![3, 4]);
    let s = fixture("qos-inconsistent.bad.json", b);
    let f = only(&s, "qos-inconsistent");
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].subject.interface.as_deref(), Some("ens4"));
    assert!(f[0].message.contains("pfc [3,4]"), "{}", f[0].message);
}

#[test]
fn degraded_link() {
    let mut b = base();
    b.port_mut("mlx5_2").rate = Some("100 Gb/sec (2X HDR)".into());
    let s = fixture("link-degraded.bad.json", b);
    let f = only(&s, "link-degraded");
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].subject.device.as_deref(), Some("mlx5_2"));
    assert_eq!(f[0].evidence["best_rate_gbps"], json!(400.0));
    assert_eq!(f[0].evidence["width"], json!(2));
}

#[test]
fn firmware_differs() {
    let mut b = base();
    b.0.rdma[3].fw_ver = Some("28.37.1014".into());
    let s = fixture("firmware-differs.bad.json", b);
    let f = only(&s, "firmware-differs");
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].subject.device.as_deref(), Some("mlx5_3"));
    assert_eq!(f[0].evidence["common"], json!("28.39.1002"));
}

#[test]
fn udp_mem_below_the_seed_case() {
    let mut b = base();
    b.0.sysctls.tuning.udp_mem = Some([188_124, 250_832, 376_248]);
    let s = fixture("udp-mem-low.bad.json", b);
    let f = only(&s, "udp-mem-low");
    assert_eq!(f[0].severity, Severity::Info);
    assert_eq!(
        f[0].remediation.policy.as_deref(),
        Some("tuning.udp_mem: [764304, 1019072, 1528608]")
    );
}

#[test]
fn dcb_not_available_and_counters_unread_are_silent() {
    // A NIC without DCB (veth) and without statistics: nothing to say, no error.
    let mut b = base();
    for n in 1..=4 {
        let i = b.iface_mut(&format!("ens{n}"));
        i.qos = Some(roce_net::Qos::not_available());
        i.ethtool_stats = None;
    }
    let f = roce_net::doctor(&b.0);
    assert!(f.is_empty(), "{f:#?}");
}

#[test]
fn snapshots_without_the_new_fields_load_and_keep_their_json() {
    // healthy.json predates ethtool statistics, QoS, rdma_cm, the VPD and the
    // table length: it loads (serde defaults) and writes back byte for byte
    // (the new fields are omitted while unknown), so schema_version stays 1.
    let path = doctor_support::fixture_dir().join("healthy.json");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains("ethtool_stats") && !text.contains("gid_tbl_len"));
    let s = HostState::from_json(&text).unwrap();
    assert_eq!(s.schema_version, 1);
    assert!(s
        .interfaces
        .iter()
        .all(|i| i.ethtool_stats.is_none() && i.qos.is_none()));
    assert_eq!(s.to_json() + "\n", text);
}

/// A fixture that is missing fails the comparison, and the test does not write
/// it (the helper used to create a missing fixture and compare it with itself).
#[test]
fn a_missing_fixture_fails_and_is_not_written() {
    let dir = tempfile::tempdir().unwrap();
    let state = healthy_hw("gpu1", 11).0;
    let r = std::panic::catch_unwind(|| {
        doctor_support::golden_in(dir.path(), "missing.json", &state, false)
    });
    assert!(r.is_err(), "a missing fixture passed");
    assert!(!dir.path().join("missing.json").exists());
    // With the update switch the same call writes it, and then it passes.
    doctor_support::golden_in(dir.path(), "missing.json", &state, true);
    assert_eq!(
        doctor_support::golden_in(dir.path(), "missing.json", &state, false),
        state
    );
}
