//! Issue 25 defect 6: small untruths a newcomer trips on, each checked against
//! the binary (no root needed).

mod support;

use std::path::Path;
use support::{bin, text};

#[test]
fn probe_arp_timeout_zero_is_refused_by_a_message_that_refuses_it() {
    let o = bin()
        .args(["probe", "arp", "--dev", "lo", "--target", "198.18.0.1"])
        .args(["--timeout", "0"])
        .output()
        .unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(65), "{t}");
    assert!(!t.contains("between 0 and"), "says 0 is allowed: {t}");
    assert!(
        t.contains("--timeout must be more than 0 and at most 3600 seconds, not 0"),
        "{t}"
    );
}

#[test]
fn lab_help_says_which_global_options_it_refuses() {
    let o = bin().args(["lab", "--help"]).output().unwrap();
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(
        t.contains("--netns and --sysfs-root are refused here"),
        "{t}"
    );
    for opt in ["--netns", "--sysfs-root"] {
        let o = bin().args([opt, "x", "lab"]).output().unwrap();
        assert_eq!(o.status.code(), Some(64), "{opt}: {}", text(&o));
    }
}

/// The egress check names which destination it routed to and why (the demo's
/// "before" named 198.18.0.1, an address that exists nowhere in the lab).
#[test]
fn asymmetric_egress_says_which_destination_it_checks_and_why() {
    let f = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("roce-net/tests/fixtures/doctor/asymmetric-egress.bad.json");
    let o = bin().arg("doctor").arg("--from").arg(&f).output().unwrap();
    let t = text(&o);
    let line = t
        .lines()
        .find(|l| l.contains("[asymmetric-egress]"))
        .unwrap_or_else(|| panic!("no asymmetric-egress finding: {t}"));
    assert!(
        line.contains("standing for any peer there: no neighbour on it is known")
            || line.contains("to its neighbour "),
        "{line}"
    );
}
