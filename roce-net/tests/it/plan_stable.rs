//! NICs keep their table and priority while they exist. The
//! host of `fixtures/plan/nic_removed` has r1..r4 applied (tables and
//! priorities 1001..1004); when r1 loses its address (a pulled cable, a NIC
//! gone), the plan takes out r1's objects only and leaves r2..r4 where they
//! are, with table names on (before: a table-name conflict, advising to edit
//! roce-net's own names file) and off (before: r2..r4 moved to 1001..1003, 8
//! route and rule changes on rails that were fine).

use roce_net::{HostState, Policy};
use std::path::PathBuf;

fn host() -> HostState {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/plan/nic_removed/current.json");
    HostState::load(&p).unwrap()
}

fn policy(names: bool) -> Policy {
    Policy::from_yaml(&format!(
        "routing:\n  default_gateway:\n    \"*\": 198.18.0.1\nregister_table_names: {names}\n"
    ))
    .unwrap()
}

#[test]
fn a_nic_that_loses_its_address_frees_only_its_own_table() {
    for names in [true, false] {
        let mut st = host();
        assert!(
            roce_net::plan(&st, &policy(names)).unwrap().is_empty(),
            "names {names}: the fixture is applied"
        );
        st.addresses
            .retain(|a| !(a.ifname == "r1" && a.address.is_ipv4()));
        let p =
            roce_net::plan(&st, &policy(names)).unwrap_or_else(|e| panic!("names {names}: {e}"));
        let diff = p.render_diff();
        for line in diff.lines() {
            assert!(
                line.starts_with("- ")
                    && (line.contains("198.18.0.11") || line.contains("roce_r1")),
                "names {names}: only r1's objects go: {line}\n{diff}"
            );
        }
        assert!(!diff.is_empty(), "names {names}: r1's objects go");
        let kept: Vec<(String, u32, u32)> = p
            .desired
            .nics
            .iter()
            .map(|n| (n.ifname.clone(), n.table, n.rule_priority))
            .collect();
        assert_eq!(
            kept,
            [
                ("r2".to_string(), 1002, 1002),
                ("r3".to_string(), 1003, 1003),
                ("r4".to_string(), 1004, 1004)
            ],
            "names {names}"
        );
    }
}

/// A new NIC takes the lowest free slot, not one a NIC in place holds.
#[test]
fn a_new_nic_takes_the_free_slot() {
    let mut st = host();
    // r1's rule and table name gone (as if r1 had never been applied): r1 is
    // new among r2..r4, which keep 1002..1004; r1 takes the free 1001.
    st.rules.retain(|r| r.priority != 1001);
    st.routes.retain(|r| r.table != 1001);
    st.table_names.remove(&1001);
    let p = roce_net::plan(&st, &policy(true)).unwrap();
    let slots: Vec<(String, u32)> = p
        .desired
        .nics
        .iter()
        .map(|n| (n.ifname.clone(), n.table))
        .collect();
    assert_eq!(
        slots,
        [
            ("r1".to_string(), 1001),
            ("r2".to_string(), 1002),
            ("r3".to_string(), 1003),
            ("r4".to_string(), 1004)
        ]
    );
}
