//! `RUST_LOG` for the CLI. The library logs through the `log` facade (every
//! netlink packet at `trace`) and is silent unless a program installs a
//! logger; this is the CLI's: one line per record on stderr, off unless
//! `RUST_LOG` is set. The syntax is env_logger's core: a comma-separated list
//! of `level` (the default) and `target=level` or bare `target` (everything
//! from it), the longest matching target prefix winning
//! (`RUST_LOG=roce_net=trace`, `RUST_LOG=debug,roce_net::kernel::netlink=trace`).
//! Why not env_logger: docs/dependencies.md.

use log::{LevelFilter, Log, Metadata, Record};
use std::io::Write;

struct Stderr {
    /// `(target prefix, level)`; the prefix `None` is the default.
    directives: Vec<(Option<String>, LevelFilter)>,
}

/// Install the stderr logger when `RUST_LOG` asks for anything.
pub fn init_from_env() {
    let Some(spec) = std::env::var_os("RUST_LOG") else {
        return;
    };
    let directives = parse(&spec.to_string_lossy());
    let max = directives
        .iter()
        .map(|(_, l)| *l)
        .max()
        .unwrap_or(LevelFilter::Off);
    if max == LevelFilter::Off {
        return;
    }
    if log::set_logger(Box::leak(Box::new(Stderr { directives }))).is_ok() {
        log::set_max_level(max);
    }
}

fn parse(spec: &str) -> Vec<(Option<String>, LevelFilter)> {
    spec.split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .filter_map(|d| match d.split_once('=') {
            Some((t, l)) => Some((Some(t.trim().to_string()), l.trim().parse().ok()?)),
            None => Some(match d.parse::<LevelFilter>() {
                Ok(l) => (None, l),
                Err(_) => (Some(d.to_string()), LevelFilter::Trace),
            }),
        })
        .collect()
}

impl Stderr {
    fn level_for(&self, target: &str) -> LevelFilter {
        let within = |prefix: &str| {
            target == prefix
                || target
                    .strip_prefix(prefix)
                    .is_some_and(|rest| rest.starts_with("::"))
        };
        self.directives
            .iter()
            .filter(|(t, _)| t.as_deref().is_none_or(within))
            .max_by_key(|(t, _)| t.as_ref().map_or(0, |t| t.len() + 1))
            .map_or(LevelFilter::Off, |(_, l)| *l)
    }
}

impl Log for Stderr {
    fn enabled(&self, m: &Metadata<'_>) -> bool {
        m.level() <= self.level_for(m.target())
    }
    fn log(&self, r: &Record<'_>) {
        if self.enabled(r.metadata()) {
            // A closed stderr loses the line; it never fails the command.
            let _ = writeln!(
                std::io::stderr().lock(),
                "[{} {}] {}",
                r.level(),
                r.target(),
                r.args()
            );
        }
    }
    fn flush(&self) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directives_pick_the_longest_matching_target() {
        let s = Stderr {
            directives: parse("warn, roce_net=debug ,roce_net::kernel::netlink=trace,bogus=x"),
        };
        assert_eq!(
            s.level_for("roce_net::kernel::netlink::socket"),
            LevelFilter::Trace
        );
        assert_eq!(s.level_for("roce_net::apply"), LevelFilter::Debug);
        assert_eq!(s.level_for("roce_net_other"), LevelFilter::Warn);
        assert_eq!(s.level_for("clap"), LevelFilter::Warn);
        let bare = Stderr {
            directives: parse("roce_net"),
        };
        assert_eq!(bare.level_for("roce_net::x"), LevelFilter::Trace);
        assert_eq!(bare.level_for("other"), LevelFilter::Off);
        assert!(parse("").is_empty());
    }
}
