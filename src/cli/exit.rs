//! Exit codes (documented in docs/cli.md, "Exit codes"), and the one mapping to
//! them from each kind of outcome: an error's kind, the worst severity of a
//! verb's findings, a probe's result.

use roce_net::{Error, ErrorKind};

/// Success; a verb that reports findings: none above info.
pub const OK: u8 = 0;
/// Findings (`doctor`, `fleet`, `nccl-env --check`): warnings, no errors.
pub const WARNINGS: u8 = 1;
/// Findings (`doctor`, `fleet`, `nccl-env --check`): errors.
pub const ERRORS: u8 = 2;
/// Bad command line.
pub const USAGE: u8 = 64;
/// Bad input data (snapshot, policy, address).
pub const DATA: u8 = 65;
/// A named object does not exist (namespace, file, interface).
pub const NOT_FOUND: u8 = 66;
/// Not permitted: run as root.
pub const PERMISSION: u8 = 77;
/// Another apply holds the lock.
pub const LOCKED: u8 = 75;
/// The host drifted since the plan was made.
pub const DRIFT: u8 = 73;
/// Apply failed and was rolled back; nothing changed.
pub const ROLLED_BACK: u8 = 3;
/// Rollback failed: the host may be in a mixed state.
pub const ROLLBACK_FAILED: u8 = 4;
/// Anything else (kernel refused, I/O).
pub const FAILURE: u8 = 70;
/// The user declined at the prompt.
pub const DECLINED: u8 = 5;
/// A probe ran and what it found is wrong: `probe rdma`, RDMA failed (the
/// report says the likely cause); `probe arp` or `probe nd`, no MAC or more
/// than one (ARP flux, or a second NIC answering for an IPv6 address)
/// answered.
pub const PROBE_FAILED: u8 = 6;
/// RDMA is unavailable here: no libibverbs, no kernel support, no devices, no
/// /dev/infiniband, or a build without the `verbs` feature (EX_UNAVAILABLE).
pub const NO_RDMA: u8 = 69;

/// The exit code of an error, from its kind.
pub fn for_error(e: &Error) -> u8 {
    match e.kind() {
        ErrorKind::Permission => PERMISSION,
        ErrorKind::NotFound => NOT_FOUND,
        ErrorKind::InvalidInput | ErrorKind::Policy | ErrorKind::Parse => DATA,
        ErrorKind::Locked => LOCKED,
        ErrorKind::Drift => DRIFT,
        ErrorKind::RolledBack | ErrorKind::Verify => ROLLED_BACK,
        ErrorKind::RollbackFailed => ROLLBACK_FAILED,
        ErrorKind::NoRdma => NO_RDMA,
        _ => FAILURE,
    }
}

/// The exit code of a verb that reports findings (`doctor`, `nccl-env
/// --check`, `fleet`), from the worst severity among them: errors 2,
/// warnings 1, only info (or none) 0. The one mapping every such verb uses.
pub fn for_severity(worst: Option<roce_net::Severity>) -> u8 {
    match worst {
        Some(roce_net::Severity::Error) => ERRORS,
        Some(roce_net::Severity::Warning) => WARNINGS,
        _ => OK,
    }
}

/// The exit code of `check` (docs/health.md): Nagios' 0 OK, 1 WARNING, 2
/// CRITICAL, 3 UNKNOWN; for node-problem-detector (`npd`) 0 OK (warnings
/// only included: no node condition for them), 1 CRITICAL (the problem), 3
/// UNKNOWN (any code other than 0 and 1 is unknown to it).
pub fn for_health(status: roce_net::HealthStatus, npd: bool) -> u8 {
    use roce_net::HealthStatus as H;
    match (status, npd) {
        (H::Ok, _) | (H::Warning, true) => 0,
        (H::Warning, false) => 1,
        (H::Critical, false) => 2,
        (H::Critical, true) => 1,
        (H::Unknown, _) => 3,
    }
}

/// The exit code of a probe that ran (`probe arp`, `probe nd`, `probe rdma`): 0 when what
/// it found is healthy, else [`PROBE_FAILED`].
pub fn for_probe(healthy: bool) -> u8 {
    if healthy {
        OK
    } else {
        PROBE_FAILED
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// Findings map to exit codes by their worst severity alone: errors 2,
    /// warnings 1, info or nothing 0; a probe by its outcome (docs/cli.md,
    /// "Exit codes").
    #[test]
    fn findings_exit_by_their_worst_severity() {
        use roce_net::Severity;
        assert_eq!(for_severity(Some(Severity::Error)), 2);
        assert_eq!(for_severity(Some(Severity::Warning)), 1);
        assert_eq!(for_severity(Some(Severity::Info)), 0);
        assert_eq!(for_severity(None), 0);
        assert_eq!(for_probe(true), 0);
        assert_eq!(for_probe(false), 6);
        use roce_net::HealthStatus as H;
        let nagios: Vec<u8> = [H::Ok, H::Warning, H::Critical, H::Unknown]
            .into_iter()
            .map(|s| for_health(s, false))
            .collect();
        assert_eq!(nagios, [0, 1, 2, 3]);
        let npd: Vec<u8> = [H::Ok, H::Warning, H::Critical, H::Unknown]
            .into_iter()
            .map(|s| for_health(s, true))
            .collect();
        assert_eq!(npd, [0, 0, 1, 3]);
    }

    /// The codes an outcome maps to are named only in this file: a verb that
    /// matched on severities (or a probe's result) itself could drift from the
    /// table. Reads the CLI's sources (as roce-net/tests/it/layering.rs does).
    #[test]
    fn outcome_codes_are_mapped_only_here() {
        fn visit(dir: &Path, files: &mut Vec<std::path::PathBuf>) {
            for e in std::fs::read_dir(dir).expect("reading src/") {
                let p = e.expect("a directory entry").path();
                if p.is_dir() {
                    visit(&p, files);
                } else if p.extension().is_some_and(|x| x == "rs") {
                    files.push(p);
                }
            }
        }
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        visit(&src, &mut files);
        assert!(files.len() > 10, "{files:?}");
        let mut offenders = Vec::new();
        for f in files.iter().filter(|f| !f.ends_with("cli/exit.rs")) {
            let text = std::fs::read_to_string(f).expect("reading a source file");
            for pattern in [
                "exit::ERRORS",
                "exit::WARNINGS",
                "exit::PROBE_FAILED",
                "Severity::Warning =>",
            ] {
                if text.contains(pattern) {
                    offenders.push(format!("{}: {pattern}", f.display()));
                }
            }
        }
        assert!(
            offenders.is_empty(),
            "map through exit::for_severity / for_probe: {offenders:?}"
        );
    }
}
