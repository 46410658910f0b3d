//! `roce-net probe rdma` and `roce-net verbs` end to end on a host without RDMA
//! (this machine: no RDMA devices, no RDMA support in the kernel). Exit 69 is
//! the "no RDMA here" answer; its message says which case it is.

use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_roce-net"))
        .args(args)
        .output()
        .expect("running roce-net")
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn arguments_are_checked_first() {
    // No peer and no --server: clap's usage error.
    assert_eq!(code(&run(&["probe", "rdma"])), 64);
    let o = run(&["probe", "rdma", "--server"]);
    assert_eq!(code(&o), 65, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--server needs --source"),
        "{}",
        stderr(&o)
    );
    let o = run(&["probe", "rdma", "198.18.0.2", "--timeout", "0"]);
    assert_eq!(code(&o), 65, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--timeout must be more than 0"),
        "{}",
        stderr(&o)
    );
    assert_eq!(code(&run(&["probe", "rdma", "198.18.0.2", "--server"])), 64);
}

#[cfg(not(feature = "verbs"))]
#[test]
fn without_the_feature_the_answer_is_not_built() {
    let o = run(&["probe", "rdma", "198.18.0.2"]);
    assert_eq!(code(&o), 69, "{}", stderr(&o));
    assert!(stderr(&o).contains("not_built"), "{}", stderr(&o));
    assert!(stderr(&o).contains("--features verbs"), "{}", stderr(&o));
    let o = run(&["verbs"]);
    assert_eq!(code(&o), 69);
    assert!(String::from_utf8_lossy(&o.stdout).contains("no RDMA (not_built)"));
}

// The CLI against hostile peers, in lab namespaces (its own file: the
// directory keeps it from being a test binary of its own).
#[cfg(feature = "verbs")]
#[path = "cli_rdma/hostile.rs"]
mod hostile;

// `mesh run`'s RDMA level through the same stand-in and sysfs fixture.
#[cfg(feature = "verbs")]
#[path = "cli_rdma/mesh.rs"]
mod mesh;

#[cfg(feature = "verbs")]
mod verbs {
    use super::*;

    fn fixture(name: &str) -> String {
        format!(
            "{}/roce-net/tests/fixtures/sysfs/{name}",
            env!("CARGO_MANIFEST_DIR")
        )
    }

    fn kernel_has_rdma() -> bool {
        std::path::Path::new("/sys/class/infiniband_verbs").exists()
    }

    #[test]
    fn options_out_of_range_are_refused_before_libibverbs() {
        let o = run(&["probe", "rdma", "198.18.0.2", "--mtu", "1500"]);
        assert_eq!(code(&o), 65, "{}", stderr(&o));
        assert!(
            stderr(&o).contains("MTU 1500 is not an RDMA MTU"),
            "{}",
            stderr(&o)
        );
        let o = run(&["probe", "rdma", "198.18.0.2", "--size", "0"]);
        assert_eq!(code(&o), 65, "{}", stderr(&o));
    }

    #[test]
    fn a_missing_libibverbs_is_exit_69_no_library() {
        let o = run(&[
            "--json",
            "probe",
            "rdma",
            "198.18.0.2",
            "--libibverbs",
            "/nonexistent/libibverbs.so.1",
        ]);
        assert_eq!(code(&o), 69, "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_str(stderr(&o).trim()).unwrap();
        assert_eq!(v["error"]["kind"], "no_rdma");
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("no_library:"),
            "{v}"
        );
        let o = run(&["verbs", "--libibverbs", "/nonexistent/libibverbs.so.1"]);
        assert_eq!(code(&o), 69);
    }

    #[test]
    fn no_kernel_support_is_exit_69_with_the_reason() {
        let o = run(&["--json", "probe", "rdma", "198.18.0.2"]);
        let e = stderr(&o);
        if kernel_has_rdma() {
            // Devices may exist; in any case not a crash and not a usage error.
            assert!(code(&o) != 64 && code(&o) != 101, "{e}");
            return;
        }
        assert_eq!(code(&o), 69, "{e}");
        let v: serde_json::Value = serde_json::from_str(e.trim()).unwrap();
        assert_eq!(v["error"]["errno"], 38);
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("no_kernel_support:"),
            "{v}"
        );
        let o = run(&["--json", "verbs"]);
        assert_eq!(code(&o), 69);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["unavailable"]["reason"], "no_kernel_support");
        assert_eq!(v["library"], "libibverbs.so.1");
    }

    #[test]
    fn doctor_verbs_reports_devices_libibverbs_cannot_use() {
        if kernel_has_rdma() {
            return;
        }
        // sysfs (the fixture) shows eight devices; the real libibverbs sees none.
        let o = run(&[
            "--json",
            "--sysfs-root",
            &fixture("connectx8"),
            "doctor",
            "--verbs",
        ]);
        assert_eq!(code(&o), 2, "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let f: Vec<&serde_json::Value> = v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["id"] == "verbs-sysfs-mismatch")
            .collect();
        assert_eq!(f.len(), 1, "{v}");
        assert_eq!(f[0]["severity"], "error");
        assert_eq!(f[0]["evidence"]["reason"], "no_kernel_support");
        assert_eq!(
            f[0]["evidence"]["sysfs_devices"].as_array().unwrap().len(),
            8
        );
    }

    #[test]
    fn snapshot_verbs_carries_the_view() {
        let o = run(&["snapshot", "--verbs"]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["verbs"]["library"], "libibverbs.so.1");
        let o = run(&["snapshot"]);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert!(v.get("verbs").is_none());
    }
}
