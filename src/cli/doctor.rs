//! `roce-net doctor`: the host's (or a snapshot's) findings, with evidence and
//! the fix; the exit code is the worst severity.

use super::context::{host, load_policy, state, Context};
use super::exit;
use super::output::{out, print_json};
use crate::render;
use roce_net::Error;
use std::path::PathBuf;

/// `doctor [--from FILE | --verbs] [-f POLICY]`.
pub(super) fn run(
    cli: &Context,
    from: &Option<PathBuf>,
    policy: &Option<PathBuf>,
    verbs: bool,
) -> Result<u8, Error> {
    let mut st = state(cli, from)?;
    if verbs {
        st.verbs = Some(host(cli)?.verbs_view(&roce_net::VerbsOptions::default()));
    }
    let mut opts = roce_net::DoctorOptions::default();
    if policy.is_some() {
        opts.policy = Some(load_policy(policy)?);
    }
    let findings = roce_net::doctor_with(&st, &opts);
    if cli.json {
        print_json(&serde_json::json!({
            "host": st.hostname,
            "netns": st.netns,
            "summary": roce_net::summarize(&findings),
            "findings": findings,
        }))?;
    } else {
        out(&render::doctor(&st, &findings));
    }
    Ok(exit::for_severity(roce_net::max_severity(&findings)))
}
