//! The cluster mesh the Slurm way (`packaging/slurm/roce-net-slurm-mesh`):
//! `salloc -N 3` over Debian's real slurmctld, slurmd and munged
//! (`scripts/lib/slurm-lab.sh`), each node a host of a lab fleet (three hosts
//! of two NICs on one switch, fixed by `apply`) with its own hostname; one
//! NIC's cable pulled. The script's srun steps (entries, then every node's
//! run) and its merge name exactly that NIC, by the node's Slurm name, and
//! exit 6. Its addresses then flushed (as networkd does on carrier loss), the
//! script's `--nic r0,r1` keeps it in n3's entry and the report still names
//! it, and its `--libibverbs PATH` (a path made to break shell quoting)
//! reaches each node's `mesh run` word for word, and no other step, whether
//! given as the option (which replaces `ROCE_NET_LIBIBVERBS`) or in
//! `ROCE_NET_LIBIBVERBS` alone. The first
//! report, passed to the Slurm HealthCheckProgram's `roce-net check --mesh`,
//! drains exactly that node.

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

    // Every roce-net call the script makes, on any node: its arguments, one
    // file per call, NUL-separated.
    let calls = dir.path().join("calls");
    let wrapper = dir.path().join("roce-net");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nprintf '%s\\0' \"$@\" >\"$(mktemp '{}/XXXXXX')\"\nexec '{}' \"$@\"\n",
            calls.display(),
            env!("CARGO_BIN_EXE_roce-net")
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let made_calls = || -> Vec<Vec<String>> {
        let mut v: Vec<Vec<String>> = std::fs::read_dir(&calls)
            .unwrap()
            .map(|e| {
                let b = std::fs::read(e.unwrap().path()).unwrap();
                String::from_utf8_lossy(&b)
                    .split_terminator('\0')
                    .map(String::from)
                    .collect()
            })
            .collect();
        v.sort();
        v
    };

    // The script as a user runs it: salloc over three nodes, the lab's /etc
    // and an empty sysfs (no RDMA device of the machine's), short slots;
    // its exit, its output and its report's faults as `element host nic cause`.
    let mesh = |out: &std::path::Path, env: &[String], more: &[&str]| {
        let _ = std::fs::remove_dir_all(&calls);
        std::fs::create_dir(&calls).unwrap();
        let o = Command::new(repo().join("scripts/lib/slurm-lab.sh"))
            .args(["run", cdir.to_str().unwrap(), "env"])
            .args(env)
            .arg(format!("ROCE_NET={}", wrapper.display()))
            .arg(format!(
                "ROCE_NET_ARGS=--etc-root {} --sysfs-root {}",
                etc.display(),
                sysfs.display()
            ))
            .args(["salloc", "-N3"])
            .arg(repo().join("packaging/slurm/roce-net-slurm-mesh"))
            .arg(out)
            .args(["--start-in", "5", "--neighbor-ms", "300", "--ip-ms", "300"])
            .args(more)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let t = text(&o);
        let r: Value = serde_json::from_str(
            &std::fs::read_to_string(out.join("report.json")).unwrap_or_default(),
        )
        .unwrap_or_default();
        let faults: Vec<String> = r["faults"]
            .as_array()
            .into_iter()
            .flatten()
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
        (o.status.code(), t, r, faults)
    };
    let logs = || text(&harness(&["logs", cdir.to_str().unwrap()]));
    let out = dir.path().join("run");
    let (code, t, r, faults) = mesh(&out, &[], &[]);
    assert_eq!(code, Some(6), "{t}\n{}", logs());
    for n in ["n1", "n2", "n3"] {
        assert!(out.join(format!("nodes/{n}.json")).is_file(), "{t}");
        assert!(out.join(format!("results/{n}.json")).is_file(), "{t}");
    }
    assert_eq!(r["verdict"], "fail", "{t}");
    assert_eq!(
        faults,
        ["nic n3 r1 link-down"],
        "{t}\n{}",
        std::fs::read_to_string(out.join("results/n3.json")).unwrap_or_default()
    );
    // Every probe was scheduled and ran: 3 nodes answered.
    assert_eq!(r["summary"]["not_run"], 0, "{:#}", r["summary"]);
    assert!(t.contains("report in"), "{t}");

    // n3's r1 also loses its addresses, as systemd-networkd drops them on
    // carrier loss: n3's scope (no RDMA device: the NICs sharing a subnet)
    // goes empty and, without --nic, the report blames the whole host
    // (`host n3 - no-nics`). The script's --nic (every node's rails, passed
    // to `mesh node`) keeps r1 in the entry and the report names it alone.
    // Its --libibverbs, a path that would run commands if the script let a
    // shell read it, goes to `mesh run` alone, as one argument (each
    // roce-net call as the wrapper saw it: the lab's nodes have no RDMA
    // device, so no RDMA level is planned and the library is never loaded).
    let injected = dir.path().join("injected");
    let i = injected.display();
    let lib = format!(
        "{}/no such dir/$(touch {i}) `touch {i}`;touch {i}/libibverbs.so.1",
        dir.path().display()
    );
    let o = Command::new("ip")
        .args(["-n", &ns[2], "addr", "flush", "dev", "r1"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let out2 = dir.path().join("run-nic");
    // ROCE_NET_LIBIBVERBS names one too: --libibverbs replaces it.
    let (code, t2, r2, faults) = mesh(
        &out2,
        &[format!(
            "ROCE_NET_LIBIBVERBS={}/replaced",
            dir.path().display()
        )],
        &["--nic", "r0,r1", "--libibverbs", &lib],
    );
    assert_eq!(code, Some(6), "{t2}\n{}", logs());
    assert_eq!(
        faults,
        ["nic n3 r1 link-down"],
        "{t2}\n{}",
        std::fs::read_to_string(out2.join("nodes/n3.json")).unwrap_or_default()
    );
    assert_eq!(r2["summary"]["unprobed"], 1, "{:#}", r2["summary"]);
    // The run's calls: every node's `mesh run` (3) got `--libibverbs LIB` as
    // one argument and nothing of a replaced value; the other steps (5) none;
    // no command ran from the path.
    let lib_reached_the_runs_only = || {
        let seen = made_calls();
        let (runs, others): (Vec<_>, Vec<_>) = seen
            .iter()
            .partition(|c| c.windows(2).any(|w| w == ["mesh", "run"]));
        assert_eq!((runs.len(), others.len()), (3, 5), "{seen:#?}");
        for c in &runs {
            assert!(
                c.windows(2).any(|w| w == ["--libibverbs", lib.as_str()])
                    && !c.iter().any(|a| a.contains("replaced")),
                "{c:?}"
            );
        }
        assert!(
            others
                .iter()
                .all(|c| c.iter().all(|a| !a.contains("libibverbs"))),
            "{seen:#?}"
        );
        assert!(!injected.exists(), "the script ran a command from a path");
    };
    lib_reached_the_runs_only();
    // The same path from ROCE_NET_LIBIBVERBS alone (as a site's Slurm
    // environment sets it) reaches the same calls, as one argument.
    let out3 = dir.path().join("run-env");
    let (code, t3, _, faults) = mesh(
        &out3,
        &[format!("ROCE_NET_LIBIBVERBS={lib}")],
        &["--nic", "r0,r1"],
    );
    assert_eq!(code, Some(6), "{t3}\n{}", logs());
    assert_eq!(faults, ["nic n3 r1 link-down"], "{t3}");
    lib_reached_the_runs_only();

    // The report in each node's health check: the HealthCheckProgram run as
    // slurmd runs it (in the node's network and UTS namespaces, so its host
    // name is its Slurm name, the name the mesh used), its settings passing
    // `--mesh` through. The doctor finds nothing wrong with n3 (the lab has no
    // RDMA device, whose port would be down): only the mesh can tell.
    let report = out.join("report.json");
    let conf = dir.path().join("roce-net.conf");
    let check_args = format!(
        "--etc-root {} --sysfs-root {} --mesh {}",
        etc.display(),
        sysfs.display(),
        report.display()
    );
    std::fs::write(
        &conf,
        format!(
            "ROCE_NET={}\nROCE_NET_CHECK_ARGS=\"{check_args}\"\n",
            env!("CARGO_BIN_EXE_roce-net")
        ),
    )
    .unwrap();
    let as_slurmd = |node: &str, cmd: &[&str]| {
        let pid = std::fs::read_to_string(cdir.join(format!("slurmd-{node}.pid"))).unwrap();
        Command::new("nsenter")
            .args(["-t", pid.trim(), "-u", "-n", "env"])
            .arg(format!("SLURM_CONF={}", cdir.join("slurm.conf").display()))
            .arg(format!("SLURMD_NODENAME={node}"))
            .arg(format!("ROCE_NET_CONF={}", conf.display()))
            .args(cmd)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };
    let program = repo().join("packaging/slurm/roce-net-slurm-health");
    for node in ["n1", "n3"] {
        let o = as_slurmd(node, &[program.to_str().unwrap()]);
        assert!(o.status.success(), "{node}: {}", text(&o));
    }
    let show = |node: &str| {
        text(&harness(&[
            "run",
            cdir.to_str().unwrap(),
            "scontrol",
            "show",
            "node",
            node,
        ]))
    };
    let n3 = show("n3");
    assert!(
        n3.contains("DRAIN") && n3.contains("Reason=roce-net: mesh-nic "),
        "{n3}"
    );
    let n1 = show("n1");
    assert!(!n1.contains("DRAIN"), "{n1}");
    // The verdict behind it, as JSON: the fault and the report's age.
    let bin = env!("CARGO_BIN_EXE_roce-net");
    let mut json = vec![bin, "--json", "check"];
    json.extend(check_args.split(' '));
    let o = as_slurmd("n3", &json);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v["critical"],
        serde_json::json!([{"id": "mesh-nic", "count": 1}]),
        "{v:#}"
    );
    assert_eq!(v["warning"], serde_json::json!([]), "{v:#}");
    assert_eq!(v["mesh"]["host"], "n3");
    assert_eq!(v["mesh"]["faults"][0]["nic"], "r1");
    // From the machine, into n3's namespace only: the host name is not the
    // mesh's, so the verdict is UNKNOWN until --mesh-host names it.
    let mut outside = vec!["--netns", ns[2].as_str(), "check"];
    outside.extend(check_args.split(' '));
    let o = Command::new(bin).args(&outside).output().unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(
        text(&o).contains("give the name the mesh used with --mesh-host"),
        "{}",
        text(&o)
    );
    let o = Command::new(bin)
        .args(&outside)
        .args(["--mesh-host", "n3", "--format", "npd"])
        .output()
        .unwrap();
    assert_eq!(
        (o.status.code(), String::from_utf8_lossy(&o.stdout).as_ref()),
        (Some(1), "roce-net: mesh-nic\n"),
        "{}",
        text(&o)
    );
}
