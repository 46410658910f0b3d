//! Using roce-net as a library: snapshot a host (or a named network namespace),
//! diagnose it, and show what the default policy would change. Changes nothing.
//!
//! ```sh
//! cargo run --example diagnose                            # this host
//! cargo run --example diagnose -- NAMESPACE               # a named namespace (needs root)
//! cargo run --example diagnose -- NAMESPACE ETC_ROOT      # ... with table names under ETC_ROOT
//! ```
//!
//! For a namespace to look at, keep the demo's host: `roce-net lab --keep` prints
//! its namespace (`--netns rnt-demo-<pid>-0-host`) and its `--etc-root`; pass
//! both. Without the etc root the plan reads the machine's `/etc/iproute2`,
//! where the lab named no tables, and proposes naming them again.
//! An error is printed as the library words it (`roce-net: error: ...`), exit 1.

use roce_net::{Host, Policy};

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("roce-net: error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), roce_net::Error> {
    let mut args = std::env::args().skip(1);
    let host = match args.next() {
        Some(ns) => Host::netns(&ns)?,
        None => Host::current(),
    };
    let host = match args.next() {
        Some(etc) => host.with_etc_root(etc),
        None => host,
    };
    let state = host.snapshot()?;
    println!(
        "{}: {} interfaces, {} routes, {} rules, {} RDMA devices",
        state.hostname,
        state.interfaces.len(),
        state.routes.len(),
        state.rules.len(),
        state.rdma.len()
    );

    let findings = roce_net::doctor(&state);
    for f in &findings {
        let sev = f.severity.to_string();
        println!("{sev:<8} {:<22} {}: {}", f.id, f.subject, f.message);
    }

    match roce_net::plan(&state, &Policy::default()) {
        Ok(p) if p.is_empty() => println!("the host already matches the default policy"),
        Ok(p) => print!("the default policy would change:\n{}", p.render_diff()),
        // E.g. no NICs in scope: the error says what to put in the policy.
        Err(e) => println!("no plan: {e}"),
    }

    for line in roce_net::nccl_env(&state).env_lines() {
        println!("{line}");
    }
    Ok(())
}
