//! NetworkManager: a shell script of `nmcli connection modify` commands that adds
//! roce-net's routes and rules to the existing connection profiles.
//!
//! Why a script and not a keyfile: a keyfile in `/etc/NetworkManager/system-connections/`
//! is a whole connection profile, not a drop-in; writing one would replace (or
//! duplicate) the profile that already configures the NIC's address. `nmcli
//! connection modify +ipv4.routes ...` changes only the listed properties of the
//! existing profile and lets NetworkManager persist it in whatever format it uses.

use super::common::{sh_quote, Layout, HEADER};
use super::{RenderOptions, RenderedFile, NM_REMOVE_PATH, NM_SCRIPT_PATH};
use crate::error::{Error, ErrorKind, Result};
use crate::model::{Family, Route, Rule, Scope};
use crate::plan::DesiredState;
use std::fmt::Write as _;
use std::path::PathBuf;

/// The read side: what this stack's configuration on the node claims.
pub(super) mod read;

pub(crate) fn render(
    _d: &DesiredState,
    layout: &Layout<'_>,
    opts: &RenderOptions,
) -> Result<Vec<RenderedFile>> {
    let mut s = String::new();
    let mut u = String::new();
    s.push_str("#!/bin/sh\n");
    s.push_str(HEADER);
    s.push('\n');
    s.push_str(SCRIPT_HEAD);
    u.push_str("#!/bin/sh\n");
    u.push_str(HEADER);
    u.push('\n');
    u.push_str(REMOVE_HEAD);
    for item in &layout.nics {
        if item.routes.is_empty() && item.rules.is_empty() {
            continue;
        }
        let ifname = &item.nic.ifname;
        let Some(prof) = opts.nm_connections.get(ifname) else {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!(
                    "no NetworkManager profile is known to configure {ifname}; roce-net adds \
                     to the profile that really manages a NIC (by UUID) and never creates \
                     one (find it with `nmcli -f GENERAL.CONNECTION device show {ifname}`, or \
                     let `roce-net persist` discover it from the keyfiles)"
                ),
            ));
        };
        // nmcli's connection identifier: `uuid <UUID>` (or `id <name>` for a
        // keyfile without a UUID), never a bare name that could match another.
        let (sel, val) = match &prof.uuid {
            Some(u) => ("uuid", u.as_str()),
            None => ("id", prof.id.as_str()),
        };
        let q = format!("{sel} {}", sh_quote(val));
        for out in [&mut s, &mut u] {
            let _ = writeln!(
                out,
                "\n# {ifname}: table {} ({}), profile {} ({})",
                item.nic.table,
                item.nic.table_name,
                prof.id.replace('\n', " "),
                prof.uuid.as_deref().unwrap_or("no uuid")
            );
        }
        let mut fams: Vec<&str> = Vec::new();
        for f in item
            .routes
            .iter()
            .map(|r| r.family)
            .chain(item.rules.iter().map(|r| r.family))
        {
            let f = family_prefix(f);
            if !fams.contains(&f) {
                fams.push(f);
            }
        }
        fams.sort();
        let _ = writeln!(s, "if check_profile {q} {}; then", fams.join(" "));
        let _ = writeln!(u, "if exists {q}; then");
        for r in &item.routes {
            let v = sh_quote(&route_value(r));
            let _ = writeln!(s, "\tadd {q} {}.routes {v}", family_prefix(r.family));
            let _ = writeln!(u, "\tdel {q} {}.routes {v}", family_prefix(r.family));
        }
        for r in &item.rules {
            let v = sh_quote(&rule_value(r));
            let _ = writeln!(s, "\tadd {q} {}.routing-rules {v}", family_prefix(r.family));
            let _ = writeln!(u, "\tdel {q} {}.routing-rules {v}", family_prefix(r.family));
        }
        s.push_str("fi\n");
        u.push_str("fi\n");
    }
    s.push_str(
        "\n# The profiles are saved; NetworkManager applies them at the next activation.\n\
         # roce-net has already configured the running kernel. To make NetworkManager\n\
         # take them over now without taking the link down: nmcli device reapply <ifname>\n\
         exit \"$rc\"\n",
    );
    u.push_str("exit \"$rc\"\n");
    let note = "run this script once as root (it is idempotent); /etc/roce-net/nm-remove.sh \
                takes the same values out again. Each profile is addressed by its UUID. It \
                leaves ipv4.route-table at its current value and warns when a profile sets it: \
                with policy routing enabled NetworkManager removes routes it did not configure \
                from every table on that device.";
    Ok(vec![
        RenderedFile {
            path: PathBuf::from(NM_SCRIPT_PATH),
            content: s,
            mode: 0o700,
            note: Some(note.into()),
        },
        RenderedFile {
            path: PathBuf::from(NM_REMOVE_PATH),
            content: u,
            mode: 0o700,
            note: Some(
                "undoes nm-apply.sh: removes exactly the routes and rules it added, from the \
                 same profiles."
                    .into(),
            ),
        },
    ])
}

const SCRIPT_HEAD: &str = r#"#
# Adds roce-net's per-NIC routes and policy rules to the existing NetworkManager
# connection profiles, addressed by UUID. Only the listed values are touched;
# addresses and every other property stay as they are. Safe to run again: each
# value is removed first (when present) and added once.
#
# Routing tables: NetworkManager only deletes routes it did not configure from
# the main table as long as a profile's ipv4.route-table is 0 (the default). Once
# a profile sets ipv4.route-table, NetworkManager fully syncs every table on that
# device and removes foreign routes there. This script does not set route-table;
# each route names its own table, so roce-net's tables stay outside NetworkManager's
# sync and the routes roce-net applies at runtime are not removed.
set -u
rc=0

# add SELECTOR CONNECTION PROPERTY VALUE
add() {
	nmcli connection modify "$1" "$2" -"$3" "$4" >/dev/null 2>&1 || true
	if ! nmcli connection modify "$1" "$2" +"$3" "$4"; then
		echo "roce-net: could not add $3 '$4' to connection $1 '$2'" >&2
		rc=1
	fi
}

# check_profile SELECTOR CONNECTION FAMILY...: the profile must exist; warn
# about each family's route-table.
check_profile() {
	sel=$1
	con=$2
	shift 2
	if ! nmcli -g connection.uuid connection show "$sel" "$con" >/dev/null 2>&1; then
		echo "roce-net: NetworkManager has no connection with $sel '$con'; skipped (find it with: nmcli -f GENERAL.CONNECTION,GENERAL.CON-UUID device show <ifname>)" >&2
		rc=1
		return 1
	fi
	for fam in "$@"; do
		t=$(nmcli -g "$fam.route-table" connection show "$sel" "$con" 2>/dev/null) || t=
		if [ -n "$t" ] && [ "$t" != 0 ]; then
			echo "roce-net: warning: connection $sel '$con' sets $fam.route-table=$t; NetworkManager then removes routes it did not configure from all tables on its device" >&2
		fi
	done
	return 0
}
"#;

const REMOVE_HEAD: &str = r#"#
# Takes roce-net's routes and policy rules out of the NetworkManager profiles that
# /etc/roce-net/nm-apply.sh added them to (by UUID); nothing else is touched.
set -u
rc=0

# exists SELECTOR CONNECTION
exists() {
	nmcli -g connection.uuid connection show "$1" "$2" >/dev/null 2>&1
}

# del SELECTOR CONNECTION PROPERTY VALUE (removing an absent value is not an
# error for nmcli 1.42).
del() {
	if ! nmcli connection modify "$1" "$2" -"$3" "$4"; then
		echo "roce-net: could not remove $3 '$4' from connection $1 '$2'" >&2
		rc=1
	fi
}
"#;

fn family_prefix(f: Family) -> &'static str {
    match f {
        Family::Inet => "ipv4",
        Family::Inet6 => "ipv6",
    }
}

/// The metric every route handed to NetworkManager carries, whoever writes
/// it (this backend's script, or netplan's keyfiles for a device of
/// `renderer: NetworkManager`): the one roce-net plans (the kernel's default
/// when the policy gives none: 0, 1024 for IPv6). Without one NetworkManager
/// gives the route the profile's `route-metric`, by default (-1) the device
/// type's (100 and up for Ethernet; libnm's `NMSettingIPConfig:route-metric`),
/// the route at boot is not the one roce-net plans, and `plan` would add a
/// second one (seen on NetworkManager 1.52 running as a service,
/// tests/vm/test_stacks.py).
pub(crate) fn route_metric(r: &Route) -> u32 {
    r.effective_metric()
}

/// nmcli's route syntax: `ip[/prefix] [next-hop] [metric] [attribute=value]...`.
fn route_value(r: &Route) -> String {
    let mut s = r.dst.to_string();
    if let Some(g) = r.gateway {
        let _ = write!(s, " {g}");
    }
    let _ = write!(s, " {}", route_metric(r));
    let _ = write!(s, " table={}", r.table);
    if let Some(p) = r.prefsrc {
        let _ = write!(s, " src={p}");
    }
    // NetworkManager's default scope is link without a gateway and global with
    // one; only say so when the route differs (older NetworkManager lacks `scope`).
    let default = if r.gateway.is_some() {
        Scope::Universe
    } else {
        Scope::Link
    };
    if r.family == Family::Inet && r.scope != default {
        let _ = write!(s, " scope={}", r.scope.as_u8());
    }
    if r.tos != 0 {
        let _ = write!(s, " tos={}", r.tos);
    }
    s
}

/// nmcli's routing-rule syntax (ip-rule-like, `priority` first and mandatory).
pub(crate) fn rule_value(r: &Rule) -> String {
    let mut s = format!("priority {}", r.priority);
    match (r.src, r.dst) {
        (None, None) => s.push_str(match r.family {
            Family::Inet => " from 0.0.0.0/0",
            Family::Inet6 => " from ::/0",
        }),
        (src, dst) => {
            if let Some(n) = src {
                let _ = write!(s, " from {n}");
            }
            if let Some(n) = dst {
                let _ = write!(s, " to {n}");
            }
        }
    }
    if let Some(i) = &r.iif {
        let _ = write!(s, " iif {i}");
    }
    if let Some(o) = &r.oif {
        let _ = write!(s, " oif {o}");
    }
    if let Some(m) = r.fwmark {
        let _ = write!(s, " fwmark {m:#x}");
        if let Some(k) = r.fwmask {
            let _ = write!(s, "/{k:#x}");
        }
    }
    if r.tos != 0 {
        let _ = write!(s, " tos {}", r.tos);
    }
    let _ = write!(s, " table {}", r.table);
    if let Some(p) = r.suppress_prefixlen {
        let _ = write!(s, " suppress_prefixlength {p}");
    }
    s
}
