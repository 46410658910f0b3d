//! What the timer writes, served by the real node_exporter: the commands of
//! `packaging/systemd/roce-net-health.service` run as systemd would run them
//! (its ExecStart lines, its Environment, its SuccessExitStatus) in a lab
//! namespace, and Debian's prometheus-node-exporter (1.5, unpacked by
//! scripts/test.sh, never installed) in the same namespace reads the textfile
//! directory and serves roce-net's metrics with `node_textfile_scrape_error 0`.
//! Its own `device` label and roce-net's `interface` label name an interface
//! whose kernel name holds a backslash in exactly the same way, so they join.

use crate::support::{ip_batch, netns, require_root, text};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The unit's `Environment=` and `ExecStart=` lines, the latter with systemd's
/// `${VAR}` (one word) and `$VAR` (split into words) expanded from `env`, and
/// whether a failure is ignored (a leading `-`).
fn exec_starts(unit: &str, env: &[(&str, String)]) -> Vec<(bool, Vec<String>)> {
    let mut vars: Vec<(String, String)> = Vec::new();
    for l in unit.lines() {
        if let Some(kv) = l.strip_prefix("Environment=") {
            let (k, v) = kv.split_once('=').unwrap();
            vars.push((k.to_string(), v.to_string()));
        }
    }
    // EnvironmentFile= overrides Environment=, as /etc/default/roce-net would.
    for (k, v) in env {
        vars.retain(|(x, _)| x != k);
        vars.push((k.to_string(), v.clone()));
    }
    let get = |k: &str| {
        vars.iter()
            .find(|(x, _)| x == k)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    unit.lines()
        .filter_map(|l| l.strip_prefix("ExecStart="))
        .map(|cmd| {
            let (ignore, cmd) = match cmd.strip_prefix('-') {
                Some(c) => (true, c),
                None => (false, cmd),
            };
            let mut words = Vec::new();
            for w in cmd.split_whitespace() {
                if let Some(k) = w.strip_prefix("${").and_then(|w| w.strip_suffix('}')) {
                    words.push(get(k));
                } else if let Some(k) = w.strip_prefix('$') {
                    words.extend(get(k).split_whitespace().map(str::to_string));
                } else {
                    words.push(w.to_string());
                }
            }
            (ignore, words)
        })
        .collect()
}

/// node_exporter, stopped (by its pid, the child we started) when dropped.
struct Exporter(Child);

impl Drop for Exporter {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `GET /metrics` from inside the namespace (a thread that entered it).
fn scrape(ns: &str, port: u16) -> std::io::Result<String> {
    let t = roce_net::NetnsTarget::named(ns).map_err(std::io::Error::other)?;
    t.run(|| -> roce_net::Result<std::io::Result<String>> {
        Ok((|| {
            let mut s = std::net::TcpStream::connect(("127.0.0.1", port))?;
            s.set_read_timeout(Some(Duration::from_secs(10)))?;
            s.write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")?;
            let mut body = String::new();
            s.take(64 << 20).read_to_string(&mut body)?;
            Ok(body)
        })())
    })
    .map_err(std::io::Error::other)?
}

#[test]
#[ignore = "needs root and Debian's prometheus-node-exporter (scripts/test.sh unpacks it)"]
fn node_exporter_serves_the_metrics_the_timer_writes() {
    require_root("node_exporter_serves_the_metrics_the_timer_writes");
    // Two NICs in one subnet (both in scope, ARP flux), one named `a\b`.
    let ns = netns("nodeexp", 0);
    ip_batch(
        &ns.0,
        "link set lo up\n\
         link add a\\b type veth peer name x0\n\
         link add r1 type veth peer name x1\n\
         addr add 198.18.3.11/24 dev a\\b\n\
         addr add 198.18.3.12/24 dev r1\n\
         link set a\\b up\nlink set x0 up\nlink set r1 up\nlink set x1 up\n",
    );
    let dir = tempfile::tempdir().unwrap();
    let textfile = dir.path().join("node-exporter");
    std::fs::create_dir(&textfile).unwrap();
    let etc = dir.path().join("etc");
    let sysfs = dir.path().join("sys");
    std::fs::create_dir(&etc).unwrap();
    std::fs::create_dir(&sysfs).unwrap();
    let verdict = dir.path().join("check.json");

    // The service's commands, as systemd runs them, in the namespace.
    let unit =
        std::fs::read_to_string(repo().join("packaging/systemd/roce-net-health.service")).unwrap();
    assert!(unit.contains("\nSuccessExitStatus=1 2\n"), "{unit}");
    let env = [
        (
            "ROCE_NET_TEXTFILE",
            textfile.join("roce_net.prom").display().to_string(),
        ),
        ("ROCE_NET_VERDICT", verdict.display().to_string()),
        (
            "ROCE_NET_CHECK_ARGS",
            format!(
                "--etc-root {} --sysfs-root {}",
                etc.display(),
                sysfs.display()
            ),
        ),
    ];
    let cmds = exec_starts(&unit, &env);
    assert_eq!(cmds.len(), 2, "{cmds:?}");
    for (ignore, words) in &cmds {
        assert_eq!(words[0], "/usr/bin/roce-net", "{words:?}");
        let mut args: Vec<String> = words[1..].to_vec();
        if words[1] == "metrics" {
            // The same host the check reads: this lab's /etc and an empty sysfs.
            args.splice(
                0..0,
                [
                    "--etc-root".to_string(),
                    etc.display().to_string(),
                    "--sysfs-root".to_string(),
                    sysfs.display().to_string(),
                ],
            );
        }
        let o = Command::new("ip")
            .args(["netns", "exec", &ns.0, env!("CARGO_BIN_EXE_roce-net")])
            .args(&args)
            .output()
            .unwrap();
        let code = o.status.code().unwrap_or(-1);
        assert!(
            *ignore || [0, 1, 2].contains(&code),
            "{words:?} failed as the unit judges it (exit {code}): {}",
            text(&o)
        );
        assert_eq!(
            code,
            if words[1] == "check" { 2 } else { 0 },
            "{}",
            text(&o)
        );
    }
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&verdict).unwrap()).unwrap();
    assert_eq!(v["status"], "critical", "{v}");

    // node_exporter in the namespace, on its loopback.
    let port = 9100;
    let bin = which("prometheus-node-exporter");
    let child = Command::new("ip")
        .args(["netns", "exec", &ns.0])
        .arg(&bin)
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .arg(format!(
            "--collector.textfile.directory={}",
            textfile.display()
        ))
        .args([
            "--collector.disable-defaults",
            "--collector.textfile",
            "--collector.netclass",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting prometheus-node-exporter");
    let mut exporter = Exporter(child);
    let deadline = Instant::now() + Duration::from_secs(20);
    let body = loop {
        match scrape(&ns.0, port) {
            Ok(b) if b.contains("node_textfile_scrape_error") => break b,
            r => {
                if let Ok(Some(st)) = exporter.0.try_wait() {
                    let mut err = String::new();
                    let _ = exporter.0.stderr.take().unwrap().read_to_string(&mut err);
                    panic!("node_exporter exited ({st}): {err}");
                }
                assert!(
                    Instant::now() < deadline,
                    "no metrics from node_exporter: {r:?}"
                );
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    };
    let (head, metrics) = body.split_once("\r\n\r\n").unwrap();
    assert!(
        head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200"),
        "{head}"
    );
    let has = |line: &str| metrics.lines().any(|l| l == line);
    assert!(has("node_textfile_scrape_error 0"), "{metrics}");
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("node_textfile_mtime_seconds{file=")
                && l.contains("roce_net.prom")),
        "{metrics}"
    );
    let written = std::fs::read_to_string(textfile.join("roce_net.prom")).unwrap();
    let errors = written
        .lines()
        .find(|l| l.starts_with("roce_net_findings{severity=\"error\"}"))
        .unwrap();
    assert!(has(errors), "{errors} not served:\n{metrics}");
    assert!(
        metrics.contains("# TYPE roce_net_rdma_port_active gauge")
            || !written.contains("roce_net_rdma_port_active"),
        "families keep their TYPE"
    );
    // The join: node_exporter's device label and roce-net's interface label
    // for the interface the kernel calls `a\b` are the same string.
    assert!(has(r#"roce_net_nic_up{interface="a\\b"} 1"#), "{metrics}");
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("node_network_info{") && l.contains(r#"device="a\\b""#)),
        "{metrics}"
    );
    assert!(!metrics.contains(r"a\\\\b"), "escaped twice:\n{metrics}");
    drop(exporter);
}

/// A tool on PATH (scripts/test.sh puts the unpacked ones first), by path.
fn which(tool: &str) -> PathBuf {
    std::env::var_os("PATH")
        .and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join(tool))
                .find(|f| Path::new(f).is_file())
        })
        .unwrap_or_else(|| {
            panic!("{tool} not on PATH (scripts/test.sh unpacks Debian's prometheus-node-exporter)")
        })
}
