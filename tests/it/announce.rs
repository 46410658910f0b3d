//! apply's announcements from the CLI: every NIC's gratuitous ARP goes out of
//! one packet socket, and the applying process does not wait for that
//! socket's close (the kernel's `packet_release` waits for an RCU grace
//! period, 5-20 ms, for every packet socket closed; one socket per NIC made an
//! 8-NIC apply 30 to 100 times slower, docs/benchmarks.md). Seen by `strace`
//! on the real CLI, not by timing it.

use crate::support::*;
use std::collections::BTreeSet;

/// `PID socket(AF_PACKET, ...) = FD` lines: (pid, fd).
fn packet_sockets(trace: &str) -> Vec<(String, String)> {
    trace
        .lines()
        .filter(|l| l.contains("socket(AF_PACKET"))
        .filter_map(|l| {
            let pid = l.split_whitespace().next()?.to_string();
            let fd = l.rsplit("= ").next()?.trim().to_string();
            Some((pid, fd))
        })
        .collect()
}

/// The pids that closed descriptor `fd` (`close(FD)`, finished or not).
fn closers(trace: &str, fd: &str) -> BTreeSet<String> {
    let call = format!("close({fd}");
    trace
        .lines()
        .filter(|l| {
            l.split_whitespace()
                .nth(1)
                .is_some_and(|c| c == format!("{call})") || c == call)
        })
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn an_apply_announces_every_nic_from_one_packet_socket_closed_by_another_process() {
    require_root("an_apply_announces_every_nic_from_one_packet_socket_closed_by_another_process");
    let lab = Lab::new("an", 8);
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace");
    // strace -f -qq -e trace=socket,close -o TRACE roce-net ... apply --yes
    let o = std::process::Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=socket,close", "-o"])
        .arg(&trace)
        .arg(env!("CARGO_BIN_EXE_roce-net"))
        .args(lab.args())
        .args(["apply", "--yes"])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("running strace (scripts/test.sh installs it)");
    assert!(o.status.success(), "apply under strace: {}", text(&o));
    let out = text(&o);
    for i in 0..8 {
        let line = format!("announced 198.18.2.{} on r{i} (gratuitous ARP)", 11 + i);
        assert!(out.contains(&line), "{line:?} missing:\n{out}");
    }
    let t = std::fs::read_to_string(&trace).unwrap();
    let sockets = packet_sockets(&t);
    assert_eq!(
        sockets.len(),
        1,
        "one packet socket for the 8 NICs' announcements:\n{t}"
    );
    let (applier, fd) = &sockets[0];
    let by: BTreeSet<String> = closers(&t, fd)
        .into_iter()
        .filter(|p| p != applier)
        .collect();
    assert!(
        !by.is_empty(),
        "the packet socket's last close belongs to another process (pid {applier} \
         opened fd {fd}):\n{t}"
    );
}
