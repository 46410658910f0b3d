//! The cluster mesh the Slurm way (`packaging/slurm/roce-net-slurm-mesh`):
//! `salloc -N 3` over Debian's real slurmctld, slurmd and munged
//! (`scripts/lib/slurm-lab.sh`), each node a host of a lab fleet (three hosts
//! of two NICs on one switch, fixed by `apply`) with its own hostname; one
//! NIC's cable pulled. The script's srun steps (entries, then every node's
//! run) and its merge name exactly that NIC, by the node's Slurm name, and
//! exit 6.

use crate::support::{require_root, text};
use roce_net::{ApplyOptions, Host, Lab, Policy};
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Output};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn harness(args: &[&str]) -> Output {
    Command::new(repo().join("scripts/lib/slurm-lab.sh"))
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("running scripts/lib/slurm-lab.sh")
}

/// The cluster, stopped however the test ends.
struct Cluster(PathBuf);

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = harness(&["stop", self.0.to_str().unwrap()]);
    }
}

#[test]
#[ignore = "needs root and Debian's slurmctld, slurmd and munge (scripts/test.sh installs them, their services disabled)"]
fn srun_one_task_per_node_names_the_pulled_cable_by_its_slurm_node() {
    require_root("srun_one_task_per_node_names_the_pulled_cable_by_its_slurm_node");
    let lab = Lab::fleet("smesh", 3, 2).unwrap();
    let ns = lab.fleet_hosts().to_vec();
    let sw = lab.switch_ns().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let etc = dir.path().join("etc");
    let sysfs = dir.path().join("sys");
    std::fs::create_dir(&etc).unwrap();
    std::fs::create_dir(&sysfs).unwrap();
    // Every host fixed (no host fault to hide the NIC's).
    for n in &ns {
        let h = Host::netns(n).unwrap().with_etc_root(&etc);
        let opts = ApplyOptions {
            state_dir: dir.path().join("state"),
            ..Default::default()
        };
        let p = roce_net::plan(&h.snapshot().unwrap(), &Policy::default()).unwrap();
        roce_net::apply(&h, &p, &opts).unwrap();
    }
    // n3's r1: its switch port down (host k, NIC i is switch port s<(k-1)*2+i>).
    let o = Command::new("ip")
        .args(["-n", &sw, "link", "set", "dev", "s5", "down"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));

    // The controller shares n1's namespace (its own hostname); every daemon
    // talks over the hosts' r0 addresses.
    let cdir = dir.path().join("cluster");
    let mut start = vec![
        "start".to_string(),
        cdir.to_str().unwrap().to_string(),
        "--controller".to_string(),
        format!("{}=198.18.1.11", ns[0]),
    ];
    for (k, n) in ns.iter().enumerate() {
        start.push("--node".to_string());
        start.push(format!("n{}={n}=198.18.{}.11", k + 1, k + 1));
    }
    let start: Vec<&str> = start.iter().map(String::as_str).collect();
    let o = harness(&start);
    let _c = Cluster(cdir.clone());
    assert!(o.status.success(), "starting the cluster: {}", text(&o));

    // The script as a user runs it: salloc over three nodes, the lab's /etc
    // and an empty sysfs (no RDMA device of the machine's), short slots.
    let out = dir.path().join("run");
    let o = Command::new(repo().join("scripts/lib/slurm-lab.sh"))
        .args(["run", cdir.to_str().unwrap(), "env"])
        .arg(format!("ROCE_NET={}", env!("CARGO_BIN_EXE_roce-net")))
        .arg(format!(
            "ROCE_NET_ARGS=--etc-root {} --sysfs-root {}",
            etc.display(),
            sysfs.display()
        ))
        .args(["salloc", "-N3"])
        .arg(repo().join("packaging/slurm/roce-net-slurm-mesh"))
        .arg(&out)
        .args(["--start-in", "5", "--neighbor-ms", "300", "--ip-ms", "300"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let t = text(&o);
    let logs = || text(&harness(&["logs", cdir.to_str().unwrap()]));
    assert_eq!(o.status.code(), Some(6), "{t}\n{}", logs());
    for n in ["n1", "n2", "n3"] {
        assert!(out.join(format!("nodes/{n}.json")).is_file(), "{t}");
        assert!(out.join(format!("results/{n}.json")).is_file(), "{t}");
    }
    let r: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    assert_eq!(r["verdict"], "fail", "{t}");
    let faults: Vec<String> = r["faults"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            format!(
                "{} {} {} {}",
                f["element"].as_str().unwrap_or("-"),
                f["host"].as_str().unwrap_or("-"),
                f["nic"].as_str().unwrap_or("-"),
                f["cause"].as_str().unwrap_or("-")
            )
        })
        .collect();
    assert_eq!(
        faults,
        ["nic n3 r1 link-down"],
        "{t}\n{}",
        std::fs::read_to_string(out.join("results/n3.json")).unwrap_or_default()
    );
    // Every probe was scheduled and ran: 3 nodes answered.
    assert_eq!(r["summary"]["not_run"], 0, "{:#}", r["summary"]);
    assert!(t.contains("report in"), "{t}");
}
