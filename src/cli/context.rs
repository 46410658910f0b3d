//! What every verb starts from: the global options (where a command acts,
//! how it prints) and what they point at: the host, a snapshot, a policy, and
//! the command line a hint must name to act on the same things. Below every
//! verb's module; it uses none of them.

use roce_net::{Error, ErrorKind, Host, HostState};
use std::path::PathBuf;

/// The global options, given before or after the verb.
#[derive(clap::Args, Debug)]
pub(crate) struct Context {
    /// Work inside this named network namespace (as `ip -n NAME`).
    #[arg(long, global = true, value_name = "NAME")]
    pub(crate) netns: Option<String>,
    /// Read RDMA devices from DIR/class/infiniband instead of /sys.
    #[arg(long, global = true, value_name = "DIR")]
    pub(crate) sysfs_root: Option<PathBuf>,
    /// Use DIR instead of /etc: iproute2's table names (DIR/iproute2), and for
    /// `persist` every configuration file it reads or writes under /etc.
    #[arg(long, global = true, value_name = "DIR")]
    pub(crate) etc_root: Option<PathBuf>,
    /// Where apply keeps its locks and journals.
    #[arg(long, global = true, value_name = "DIR", default_value = roce_net::DEFAULT_STATE_DIR)]
    pub(crate) state_dir: PathBuf,
    /// Whether `--state-dir` was given (not its default).
    #[arg(skip)]
    pub(crate) state_dir_given: bool,
    /// Machine-readable JSON output.
    #[arg(long, global = true)]
    pub(crate) json: bool,
}

/// `roce-net` with the global options that pick what a command acts on, as the
/// user gave them (`--netns`, `--etc-root`, a `--state-dir` other than the
/// default, `--sysfs-root`), shell-quoted: the command a hint must name so
/// that, run as printed, it acts on the same namespace, state directory, `/etc`
/// and sysfs tree.
pub(crate) fn command_prefix(cli: &Context) -> String {
    let state = (cli.state_dir != std::path::Path::new(roce_net::DEFAULT_STATE_DIR))
        .then_some(cli.state_dir.as_path());
    let mut s = roce_net_with(cli.netns.as_deref(), cli.etc_root.as_deref(), state);
    // The same host as this command saw: a printed follow-up observes the same
    // sysfs tree too.
    if let Some(r) = &cli.sysfs_root {
        s.push_str(" --sysfs-root ");
        s.push_str(&roce_net::shell_word(&r.to_string_lossy()));
    }
    s
}

/// `roce-net --netns NS --etc-root DIR --state-dir DIR`, each option only when
/// given, shell-quoted: the one spelling of a command line that acts on one
/// namespace, `/etc` and state directory (hints, the kept lab's commands).
pub(crate) fn roce_net_with(
    netns: Option<&str>,
    etc_root: Option<&std::path::Path>,
    state_dir: Option<&std::path::Path>,
) -> String {
    let mut s = String::from("roce-net");
    if let Some(n) = netns {
        s.push_str(" --netns ");
        s.push_str(&roce_net::shell_word(n));
    }
    if let Some(r) = etc_root {
        s.push_str(" --etc-root ");
        s.push_str(&roce_net::shell_word(&r.to_string_lossy()));
    }
    if let Some(d) = state_dir {
        s.push_str(" --state-dir ");
        s.push_str(&roce_net::shell_word(&d.to_string_lossy()));
    }
    s
}

/// The host the global options name (`--netns`, `--sysfs-root`, `--etc-root`).
pub(crate) fn host(cli: &Context) -> Result<Host, Error> {
    let mut h = match &cli.netns {
        Some(n) => Host::netns(n)?,
        None => Host::current(),
    };
    if let Some(r) = &cli.sysfs_root {
        // A mistyped root would read as a host without RDMA devices.
        if !r.is_dir() {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!(
                    "--sysfs-root {}: no such directory (give the directory holding class/infiniband)",
                    r.display()
                ),
            ));
        }
        h = h.with_sysfs_root(r.clone());
    }
    if let Some(r) = &cli.etc_root {
        h = h.with_etc_root(r.clone());
    }
    Ok(h)
}

/// The snapshot in `from`, else the live host's.
pub(crate) fn state(cli: &Context, from: &Option<PathBuf>) -> Result<HostState, Error> {
    match from {
        Some(p) => HostState::load(p),
        None => host(cli)?.snapshot(),
    }
}

/// The policy in `path`, else the default one.
pub(crate) fn load_policy(path: &Option<PathBuf>) -> Result<roce_net::Policy, Error> {
    match path {
        Some(p) => roce_net::Policy::load(p),
        None => Ok(roce_net::Policy::default()),
    }
}
