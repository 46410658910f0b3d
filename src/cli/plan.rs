//! `roce-net plan`: the changes a policy needs on this host, as a reviewable
//! diff, optionally saved for `apply --plan`.

use super::context::{command_prefix, host, load_policy, Context};
use super::exit;
use super::output::{localize_hints, out, print_json};
use crate::render;
use roce_net::Error;
use std::path::PathBuf;

/// `plan [-f POLICY] [-o FILE]`.
pub(super) fn run(
    cli: &Context,
    policy: &Option<PathBuf>,
    output: &Option<PathBuf>,
) -> Result<u8, Error> {
    let policy_file = policy.clone();
    let policy = load_policy(policy)?;
    let st = host(cli)?.snapshot()?;
    let p = roce_net::plan(&st, &policy)?;
    if let Some(o) = output {
        std::fs::write(o, p.to_json() + "\n")
            .map_err(|e| Error::io(e, format!("writing plan to {}", o.display())))?;
    }
    if cli.json {
        print_json(&p)?;
    } else {
        let mut text = render::plan(&p);
        if !p.is_empty() {
            text.push_str(&apply_hint(policy_file.as_deref(), output.as_deref()));
        }
        out(&localize_hints(&text, &command_prefix(cli)));
    }
    Ok(exit::OK)
}

/// How to apply what `plan` showed, as commands to copy: `apply` with the same
/// policy file (planned again then), or the reviewed plan itself: the file
/// `-o` wrote, else how to write one.
fn apply_hint(policy: Option<&std::path::Path>, output: Option<&std::path::Path>) -> String {
    let pol = policy
        .map(|f| format!(" -f {}", roce_net::shell_word(&f.to_string_lossy())))
        .unwrap_or_default();
    let reviewed = match output {
        Some(o) => format!(
            "`roce-net apply --plan {}`",
            roce_net::shell_word(&o.to_string_lossy())
        ),
        None => {
            format!("save it with `roce-net plan{pol} -o FILE`, then `roce-net apply --plan FILE`")
        }
    };
    format!(
        "review, then apply with `roce-net apply{pol}` (the same policy, planned again \
         against the host) or the plan as reviewed: {reviewed}\n"
    )
}
