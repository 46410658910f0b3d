//! The lab every apply test starts from: a seed lab, its host handle with a
//! private `/etc` (table names) and apply options with a private state
//! directory, both removed with it. One definition for the library's unit
//! tests (`roce-net/src/apply/tests.rs` includes this file) and its
//! integration tests (`lab_apply.rs`).

use roce_net::{ApplyOptions, Host, Lab};

/// A seed lab ready for `apply`.
pub struct Env {
    /// The lab (its namespaces go when it drops).
    pub lab: Lab,
    /// Its host namespace, with the private `/etc`.
    pub host: Host,
    /// Apply options with the private state directory.
    pub opts: ApplyOptions,
    _dirs: (tempfile::TempDir, tempfile::TempDir),
}

impl Env {
    /// A seed lab of `nics` NICs for `test`, its namespaces tagged `tag`
    /// (each test binary its own); needs root and fails without it.
    pub fn new(test: &str, tag: &str, nics: usize) -> Env {
        Env::of(test, || Lab::seed_tagged(tag, nics))
    }

    /// The lab `build` makes (after the root check), with the private `/etc`
    /// and state directory: for labs other than the IPv4 seed.
    pub fn of(test: &str, build: impl FnOnce() -> roce_net::Result<Lab>) -> Env {
        roce_net_testkit::require_root(test);
        let lab = build().unwrap_or_else(|e| panic!("{test}: building lab: {e}"));
        let etc = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        let host = lab.host().unwrap().with_etc_root(etc.path());
        let opts = ApplyOptions {
            state_dir: state.path().to_path_buf(),
            ..Default::default()
        };
        Env {
            lab,
            host,
            opts,
            _dirs: (etc, state),
        }
    }
}
