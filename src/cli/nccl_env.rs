//! `roce-net nccl-env`: the NCCL environment for this host's RDMA devices and
//! GID tables, or (`--check`) the findings on the environment a job has.

use super::context::{state, Context};
use super::exit;
use super::output::{out, print_json};
use crate::render;
use roce_net::{Error, HostState, NcclOptions};
use std::path::PathBuf;

/// `nccl-env [--from FILE] [--export | --check [--env-file FILE]] [--nccl-version V]`.
pub(super) fn run(
    cli: &Context,
    from: &Option<PathBuf>,
    export: bool,
    nccl_version: Option<roce_net::NcclVersion>,
    check: bool,
    env_file: &Option<PathBuf>,
) -> Result<u8, Error> {
    let st = state(cli, from)?;
    let opts = NcclOptions::for_version(nccl_version);
    if check {
        return check_env(cli, &st, &opts, env_file);
    }
    let advice = roce_net::nccl_env_with(&st, &opts);
    if cli.json {
        print_json(&advice)?;
    } else if export {
        out(&export_lines(&advice));
    } else {
        out(&render::nccl(&advice));
    }
    Ok(exit::OK)
}

/// `--check`: the variables of this process (or `--env-file`, parsed as NCCL
/// parses `nccl.conf`) checked against the host; exit code as for `doctor`.
fn check_env(
    cli: &Context,
    st: &HostState,
    opts: &NcclOptions,
    env_file: &Option<PathBuf>,
) -> Result<u8, Error> {
    let env = match env_file {
        Some(p) => roce_net::NcclEnv::parse_conf(&roce_net::read_input_text(
            p,
            roce_net::InputKind::NcclConf,
        )?),
        None => roce_net::NcclEnv::from_process(),
    };
    let findings = roce_net::nccl_check(st, &env, opts);
    if cli.json {
        print_json(&findings)?;
    } else {
        out(&render::nccl_check(&env, &findings));
    }
    Ok(exit::for_severity(roce_net::max_severity(&findings)))
}

/// `--export`: each `NAME=value` of the advice as `export NAME='value'`,
/// shell-quoted, for `eval`.
fn export_lines(advice: &roce_net::NcclAdvice) -> String {
    let lines: Vec<String> = advice
        .env_lines()
        .iter()
        .map(|l| match l.split_once('=') {
            Some((k, v)) => format!("export {k}='{}'", v.replace('\'', "'\\''")),
            None => l.clone(),
        })
        .collect();
    lines.join("\n")
}
