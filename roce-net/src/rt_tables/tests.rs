//! Routing table and protocol names from fixture `/etc` and distribution trees.
use super::{read_protocol_names_with, read_table_names, read_table_names_with};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn fx(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/rt_tables")
        .join(p)
}

fn map<K: Ord + Copy>(pairs: &[(K, &str)]) -> BTreeMap<K, String> {
    pairs.iter().map(|(k, v)| (*k, v.to_string())).collect()
}

#[test]
fn etc_file_then_dist_d_then_etc_d() {
    let mut w = Vec::new();
    let t = read_table_names_with(&fx("etc"), &fx("dist"), &mut w);
    assert_eq!(
        t,
        map(&[
            (0, "unspec"),
            (100, "nic0"),
            (253, "default"),
            (254, "main"),
            (255, "local"),
            // dist/rt_tables.d/vendor.conf is read; dist b.conf is shadowed by etc b.conf.
            (600, "vendor"),
            // etc rt_tables.d/b.conf (read after the main file) overrides 1001.
            (1001, "nic1-override"),
            (1002, "nic2"),
            (1003, "nic3"),
        ])
    );
    // dist/rt_tables is not read when etc has one; ignored.txt is not a .conf.
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].source.ends_with("etc/iproute2/rt_tables"));
    assert!(w[0].message.starts_with("line 14:"), "{}", w[0].message);
}

#[test]
fn dist_file_when_etc_file_is_missing() {
    let mut w = Vec::new();
    let t = read_table_names_with(&fx("etc-fallback"), &fx("dist"), &mut w);
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(
        t,
        map(&[
            (0, "unspec"),
            (253, "default"),
            (254, "main"),
            (255, "local"),
            (500, "dist-only"),
            (600, "vendor"),
            (700, "shadowed-by-etc"),
            (1500, "fallback-extra"),
        ])
    );
}

#[test]
fn nothing_anywhere_is_empty() {
    let mut w = Vec::new();
    let t = read_table_names_with(
        Path::new("/nonexistent-etc"),
        Path::new("/nonexistent-usr"),
        &mut w,
    );
    assert!(t.is_empty() && w.is_empty());
}

#[test]
fn protocol_names() {
    let mut w = Vec::new();
    let p = read_protocol_names_with(&fx("etc"), &fx("dist"), &mut w);
    assert_eq!(p.get(&201).map(String::as_str), Some("roce-net"));
    assert_eq!(p.get(&16).map(String::as_str), Some("dhcp"));
    assert_eq!(p.get(&186).map(String::as_str), Some("bgp"));
    assert_eq!(p.get(&2).map(String::as_str), Some("kernel"));
    assert_eq!(p.len(), 9);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].message.contains("300 is above the maximum 255"),
        "{w:?}"
    );
}

#[test]
fn default_entry_point_reads_etc() {
    // The distribution fallback is not consulted when etc has rt_tables.
    let mut w = Vec::new();
    let t = read_table_names(&fx("etc"), &mut w);
    assert_eq!(t.get(&1002).map(String::as_str), Some("nic2"));
    assert_eq!(t.get(&100).map(String::as_str), Some("nic0"));
}

#[test]
fn table_names_iproute2_can_hold() {
    use super::{check_table_name, table_name_problem, MAX_TABLE_NAME_LEN};
    assert_eq!(table_name_problem("roce_r1"), None);
    assert_eq!(table_name_problem(&"a".repeat(MAX_TABLE_NAME_LEN)), None);
    for (bad, why) in [
        ("", "empty"),
        ("123", "number"),
        ("0x1f", "number"),
        ("main", "built-in"),
        ("local", "built-in"),
        ("roce_r\\xff", "contains"),
        ("a b", "contains"),
    ] {
        let w = table_name_problem(bad).unwrap_or_else(|| panic!("{bad:?} accepted"));
        assert!(w.contains(why), "{bad:?}: {w}");
    }
    let long = "a".repeat(5000);
    let e = check_table_name(1001, &long).unwrap_err().to_string();
    assert!(e.contains("5000 bytes") && e.len() < 400, "{e}");
    // Hex digits after 0x only make a number when all of it is hex.
    assert_eq!(table_name_problem("0xr1"), None);
}
