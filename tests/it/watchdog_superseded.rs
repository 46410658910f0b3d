//! A `__watchdog` whose apply is no longer the pending one
//! (its journal replaced by a newer apply's, removed with the state directory,
//! or unreadable) leaves at once instead of waiting out its timeout.

use crate::support;

use std::time::Duration;
use support::*;

/// The process `pid` has exited (gone, or a zombie nobody reaped yet).
fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(s) => s
            .rsplit_once(')')
            .map(|(_, rest)| rest.trim_start().starts_with('Z'))
            .unwrap_or(false),
    }
}

/// Ends the watchdog this test started (through `apply`) if it is still there.
struct Reap(i32);

impl Drop for Reap {
    fn drop(&mut self) {
        if !gone(self.0) {
            signal(self.0 as u32, libc::SIGTERM);
        }
    }
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn a_watchdog_leaves_once_its_apply_is_no_longer_the_pending_one() {
    require_root("a_watchdog_leaves_once_its_apply_is_no_longer_the_pending_one");
    for case in ["replaced by a newer apply", "removed", "unreadable"] {
        let lab = Lab::new("wdgone", 2);
        let o = lab.run(&["apply", "--yes", "--confirm-timeout", "600"]);
        assert!(o.status.success(), "{case}: apply: {}", text(&o));
        let pid = lab.status()["watchdog"]["pid"]
            .as_i64()
            .unwrap_or_else(|| panic!("{case}: no watchdog pid in {}", lab.status()))
            as i32;
        let _reap = Reap(pid);
        // Still guarding: its apply is pending.
        std::thread::sleep(Duration::from_millis(600));
        assert!(
            !gone(pid),
            "{case}: the watchdog left while its apply is pending"
        );
        let journal = lab.state_file(".journal.json").unwrap();
        match case {
            "replaced by a newer apply" => {
                let mut j: serde_json::Value =
                    serde_json::from_slice(&std::fs::read(&journal).unwrap()).unwrap();
                j["apply_id"] = "a-newer-apply".into();
                let tmp = journal.with_extension("tmp-test");
                std::fs::write(&tmp, serde_json::to_vec(&j).unwrap()).unwrap();
                std::fs::rename(&tmp, &journal).unwrap();
            }
            "removed" => std::fs::remove_dir_all(&lab.state).unwrap(),
            _ => std::fs::write(&journal, b"{ not a journal").unwrap(),
        }
        wait_until(
            &format!("the watchdog leaves once its journal is {case}"),
            Duration::from_secs(10),
            || gone(pid),
        );
    }
}
