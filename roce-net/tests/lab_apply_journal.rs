//! The apply journal's step log against a real apply: while an apply is paused
//! mid-way (test hook), the journal read back reports exactly which steps are done,
//! also inside a run of table-name steps that are written together. Needs root;
//! fails in CI when it cannot run.

mod lab_support;

use lab_support::require_root;
use roce_net::Change;
use roce_net::Lab;
use roce_net::Policy;
use roce_net::{ApplyOptions, JournalState, StepStatus};
use std::time::{Duration, Instant};

fn paused_progress(test: &str, pause_at: impl Fn(&[Change]) -> usize) {
    require_root(test);
    let lab = Lab::seed_tagged("ba", 3).unwrap();
    let etc = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let host = lab.host().unwrap().with_etc_root(etc.path());
    let p = roce_net::plan(&host.snapshot().unwrap(), &Policy::default()).unwrap();
    let at = pause_at(&p.changes);
    let opts = ApplyOptions {
        state_dir: state.path().to_path_buf(),
        pause_after: Some((at, Duration::from_millis(1500))),
        ..Default::default()
    };
    let n = p.changes.len();
    std::thread::scope(|s| {
        let applying = s.spawn(|| roce_net::apply(&host, &p, &opts));
        let t = Instant::now();
        let seen = loop {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "{test}: no progress seen"
            );
            if let Some(j) = roce_net::apply_status(&host, &opts).unwrap() {
                if j.state == JournalState::Applying && j.steps[at].status == StepStatus::Done {
                    break j;
                }
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let got: Vec<StepStatus> = seen.steps.iter().map(|s| s.status).collect();
        let mut want = vec![StepStatus::Done; at + 1];
        want.resize(n, StepStatus::Pending);
        assert_eq!(got, want, "{test}: progress while paused after step {at}");
        let report = applying.join().unwrap().unwrap();
        assert_eq!(report.applied, n);
    });
    let j = roce_net::apply_status(&host, &opts).unwrap().unwrap();
    assert_eq!(j.state, JournalState::Committed);
    assert!(j.steps.iter().all(|s| s.status == StepStatus::Done));
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn paused_apply_reports_exact_progress() {
    paused_progress("paused_apply_reports_exact_progress", |c| {
        c.iter()
            .position(|c| matches!(c, Change::AddRoute { .. }))
            .unwrap()
    });
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn paused_apply_inside_table_names_reports_exact_progress() {
    paused_progress(
        "paused_apply_inside_table_names_reports_exact_progress",
        |c| {
            assert!(matches!(c[0], Change::RegisterTableName { .. }));
            assert!(matches!(c[2], Change::RegisterTableName { .. }));
            0
        },
    );
}
