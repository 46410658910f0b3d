//! The Slurm HealthCheckProgram (`packaging/slurm/roce-net-slurm-health`)
//! against Debian's real slurmctld, slurmd and munged (22.05), each "node" a
//! lab namespace with its own hostname (`scripts/lib/slurm-lab.sh`): the
//! seed's broken host is drained with the reason `roce-net: <ids>` before a
//! job lands on it, a job asking for it waits while another runs elsewhere, a
//! node drained for another reason is left alone, and the node returns once
//! `roce-net apply` fixed it — by slurmd running the program, nothing else.

use crate::support::{require_root, text};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `scripts/lib/slurm-lab.sh ARGS`.
fn harness(args: &[&str]) -> Output {
    Command::new(repo().join("scripts/lib/slurm-lab.sh"))
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("running scripts/lib/slurm-lab.sh")
}

/// A cluster started by the harness, stopped (its daemons, its directory)
/// however the test ends.
struct Cluster(PathBuf);

impl Cluster {
    /// A client command in the controller's namespace; its stdout.
    fn run(&self, args: &[&str]) -> String {
        let mut a = vec!["run", self.0.to_str().unwrap()];
        a.extend_from_slice(args);
        let o = harness(&a);
        assert!(o.status.success(), "{args:?}: {}", text(&o));
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// `(State, Reason)` of a node, as scontrol prints them (the reason
    /// without its `[user@time]`).
    fn node(&self, name: &str) -> (String, String) {
        let out = self.run(&["scontrol", "show", "node", name]);
        let state = out
            .split_whitespace()
            .find_map(|w| w.strip_prefix("State="))
            .unwrap_or_default()
            .to_string();
        let reason = out
            .lines()
            .find_map(|l| l.trim_start().strip_prefix("Reason="))
            .map(|r| r.rsplit_once(" [").map_or(r, |(a, _)| a).to_string())
            .unwrap_or_default();
        (state, reason)
    }

    /// Wait (at most `secs`) until `ok` holds for the node's state and reason.
    fn wait_node(&self, name: &str, secs: u64, what: &str, ok: impl Fn(&str, &str) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let (state, reason) = self.node(name);
            if ok(&state, &reason) {
                return;
            }
            if Instant::now() > deadline {
                let logs = harness(&["logs", self.0.to_str().unwrap()]);
                panic!(
                    "{name} not {what} within {secs} s: State={state} Reason={reason}\n{}",
                    text(&logs)
                );
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// A job's state and node list (`squeue`, then `scontrol show job` once
    /// it left the queue).
    fn job(&self, id: &str) -> (String, String) {
        let out = self.run(&["scontrol", "show", "job", id]);
        let field = |k: &str| {
            out.split_whitespace()
                .find_map(|w| w.strip_prefix(k))
                .unwrap_or_default()
                .to_string()
        };
        (field("JobState="), field("NodeList="))
    }

    fn wait_job(&self, id: &str, state: &str, secs: u64) -> String {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let (s, nodes) = self.job(id);
            if s == state {
                return nodes;
            }
            assert!(
                Instant::now() < deadline,
                "job {id} not {state} within {secs} s: {s} on {nodes}"
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = harness(&["stop", self.0.to_str().unwrap()]);
    }
}

fn sbatch(c: &Cluster, args: &[&str]) -> String {
    let mut a = vec!["sbatch", "--parsable"];
    a.extend_from_slice(args);
    c.run(&a).trim().to_string()
}

#[test]
#[ignore = "needs root and Debian's slurmctld, slurmd and munge (scripts/test.sh installs them, their services disabled)"]
fn slurm_drains_the_broken_node_before_a_job_lands_and_resumes_it_once_fixed() {
    require_root("slurm_drains_the_broken_node_before_a_job_lands_and_resumes_it_once_fixed");
    let mut lab = roce_net::Lab::seed_tagged("slurm", 4).unwrap();
    let host = lab.host_ns().unwrap().to_string();
    let ctl = lab.peer_ns().unwrap().to_string();
    // A second node: one NIC, nothing roce-net calls broken.
    let n2 = lab.add_namespace("n2").unwrap();
    lab.connect(&n2, "r0", "198.18.0.50".parse().unwrap(), 24)
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let etc = dir.path().join("etc");
    let sysfs = dir.path().join("sys");
    let state = dir.path().join("state");
    std::fs::create_dir(&etc).unwrap();
    std::fs::create_dir(&sysfs).unwrap();
    // The site's settings, as /etc/default/roce-net would hold them: the
    // binary under test, this lab's /etc and an empty sysfs (no RDMA device
    // of the machine's reaches the verdict).
    let conf = dir.path().join("roce-net.conf");
    std::fs::write(
        &conf,
        format!(
            "ROCE_NET={}\nROCE_NET_CHECK_ARGS=\"--etc-root {} --sysfs-root {}\"\n",
            env!("CARGO_BIN_EXE_roce-net"),
            etc.display(),
            sysfs.display()
        ),
    )
    .unwrap();
    // slurmd runs the HealthCheckProgram with an environment of its own and
    // no arguments: a two-line program names the settings file and runs the
    // shipped one, unchanged.
    let program = dir.path().join("health-check");
    std::fs::write(
        &program,
        format!(
            "#!/bin/sh\nROCE_NET_CONF={} exec {}\n",
            conf.display(),
            repo()
                .join("packaging/slurm/roce-net-slurm-health")
                .display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();

    let cdir = dir.path().join("cluster");
    let o = harness(&[
        "start",
        cdir.to_str().unwrap(),
        "--controller",
        &format!("{ctl}=198.18.0.100"),
        "--node",
        &format!("n1={host}=198.18.0.11"),
        "--node",
        &format!("n2={n2}=198.18.0.50"),
        "--conf",
        &format!("HealthCheckProgram={}", program.display()),
        "--conf",
        "HealthCheckInterval=2",
        "--conf",
        "HealthCheckNodeState=ANY",
    ]);
    let c = Cluster(cdir.clone());
    assert!(o.status.success(), "starting the cluster: {}", text(&o));

    // The broken host is drained by the program slurmd runs, naming the checks.
    let want = "roce-net: arp-ignore,arp-announce,source-rule-missing,asymmetric-egress";
    c.wait_node("n1", 30, "drained by roce-net", |s, r| {
        s.contains("DRAIN") && r == want
    });
    let (s2, _) = c.node("n2");
    assert!(!s2.contains("DRAIN"), "n2 is healthy: {s2}");

    // Jobs submitted meanwhile: one that needs n1 waits, one that can run
    // anywhere runs on n2, never on the drained node.
    let out = cdir.join("job-%j.out");
    let out = out.to_str().unwrap();
    let on_n1 = sbatch(&c, &["-w", "n1", "-o", out, "--wrap", "hostname"]);
    let anywhere = sbatch(&c, &["-N1", "-o", out, "--wrap", "hostname"]);
    assert_eq!(c.wait_job(&anywhere, "COMPLETED", 30), "n2");
    let read_out =
        |id: &str| std::fs::read_to_string(cdir.join(format!("job-{id}.out"))).unwrap_or_default();
    assert_eq!(read_out(&anywhere).trim(), "n2");
    std::thread::sleep(Duration::from_secs(3));
    let (js, _) = c.job(&on_n1);
    assert_eq!(js, "PENDING", "a job asking for the drained n1 must wait");

    // n2 drained by the administrator: roce-net finds n2 healthy and leaves
    // that drain alone.
    c.run(&[
        "scontrol",
        "update",
        "nodename=n2",
        "state=drain",
        "reason=maintenance: disk",
    ]);

    // Fixed: n1 returns, by itself, and the waiting job runs there.
    let roce = |args: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_roce-net"));
        cmd.args(["--netns", &host, "--etc-root"])
            .arg(&etc)
            .arg("--state-dir")
            .arg(&state)
            .args(args);
        cmd.output().unwrap()
    };
    let o = roce(&["apply", "--yes"]);
    assert!(o.status.success(), "apply: {}", text(&o));
    c.wait_node("n1", 30, "resumed", |s, _| !s.contains("DRAIN"));
    assert_eq!(c.wait_job(&on_n1, "COMPLETED", 30), "n1");
    assert_eq!(read_out(&on_n1).trim(), "n1");
    // Several health checks later n2 is still the administrator's.
    std::thread::sleep(Duration::from_secs(5));
    let (s2, r2) = c.node("n2");
    assert!(
        s2.contains("DRAIN") && r2 == "maintenance: disk",
        "{s2} {r2}"
    );

    // Broken again while the administrator holds n1 for something else: the
    // administrator's reason stays, and a fix does not resume n1 either.
    c.run(&[
        "scontrol",
        "update",
        "nodename=n1",
        "state=drain",
        "reason=hw: replace DIMM",
    ]);
    let o = roce(&["rollback"]);
    assert!(o.status.success(), "rollback: {}", text(&o));
    std::thread::sleep(Duration::from_secs(5));
    assert_eq!(c.node("n1").1, "hw: replace DIMM");
    let o = roce(&["apply", "--yes"]);
    assert!(o.status.success(), "apply: {}", text(&o));
    std::thread::sleep(Duration::from_secs(5));
    let (s1, r1) = c.node("n1");
    assert!(
        s1.contains("DRAIN") && r1 == "hw: replace DIMM",
        "{s1} {r1}"
    );
    drop(c);
    assert!(!cdir.exists(), "the harness removes its directory");
    let _ = Path::new(&host);
}
