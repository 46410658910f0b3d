//! Shared pieces: input validation, grouping routes and rules by NIC, and the
//! files every backend writes (sysctl.d, rt_tables.d, rt_protos.d).

use super::{Backend, RenderedFile, PROTOCOL_NAME, RT_PROTOS_PATH, RT_TABLES_PATH, SYSCTL_PATH};
use crate::error::{Error, ErrorKind, Result};
use crate::model::{Route, RouteType, Rule, RuleAction};
use crate::plan::{DesiredState, NicDesired};
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::PathBuf;

/// The first line of every rendered file (shell/INI/YAML comment syntax).
pub(crate) const HEADER: &str =
    "# Written by roce-net. Do not edit: change the policy and run `roce-net persist` again.";

/// One NIC with the routes and rules that belong to it.
pub(crate) struct NicItems<'a> {
    pub nic: &'a NicDesired,
    pub routes: Vec<&'a Route>,
    pub rules: Vec<&'a Rule>,
}

/// The desired state, validated and grouped per NIC (in the order of `nics`).
pub(crate) struct Layout<'a> {
    pub nics: Vec<NicItems<'a>>,
}

impl<'a> Layout<'a> {
    /// Validate names and tie every route and rule to one NIC. Backends that
    /// render no routes (`sysctl.d`, `rt_tables.d`) only get the name checks.
    pub fn build(d: &'a DesiredState, backend: Backend) -> Result<Layout<'a>> {
        let mut seen = BTreeSet::new();
        for n in &d.nics {
            check_ifname(&n.ifname)?;
            if !seen.insert(n.ifname.as_str()) {
                return Err(Error::new(
                    ErrorKind::InvalidInput,
                    format!("NIC {:?} appears twice in the desired state", n.ifname),
                ));
            }
        }
        for (id, name) in &d.table_names {
            crate::rt_tables::check_table_name(*id, name)?;
        }
        let mut nics: Vec<NicItems<'a>> = d
            .nics
            .iter()
            .map(|nic| NicItems {
                nic,
                routes: Vec::new(),
                rules: Vec::new(),
            })
            .collect();
        if matches!(backend, Backend::SysctlD | Backend::RtTablesD) {
            return Ok(Layout { nics });
        }
        for r in &d.routes {
            check_route(r, backend)?;
            let i = route_owner(d, r)?;
            nics[i].routes.push(r);
        }
        for r in &d.rules {
            check_rule(r, backend)?;
            let i = rule_owner(d, r)?;
            nics[i].rules.push(r);
        }
        Ok(Layout { nics })
    }
}

/// Interface names end up in paths, YAML keys and shell scripts: allow only the
/// characters real NIC names use.
pub(crate) fn check_ifname(s: &str) -> Result<()> {
    let ok = !s.is_empty()
        && s.len() <= 15
        && s != "."
        && s != ".."
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b'@'));
    if ok {
        Ok(())
    } else {
        Err(Error::new(
            ErrorKind::InvalidInput,
            format!(
                "interface name {s:?} cannot be persisted safely: it must be 1-15 characters \
                 from A-Z a-z 0-9 . - _ @"
            ),
        ))
    }
}

fn unsupported(backend: Backend, what: String) -> Error {
    Error::new(
        ErrorKind::Unsupported,
        format!("the {backend} backend cannot persist {what}; use --backend ifupdown or persist it by hand"),
    )
}

fn check_route(r: &Route, backend: Backend) -> Result<()> {
    if r.kind != RouteType::Unicast {
        return Err(unsupported(
            backend,
            format!("route {} table {}: type {:?}", r.dst, r.table, r.kind),
        ));
    }
    if !r.multipath.is_empty() {
        return Err(unsupported(
            backend,
            format!("multipath route {} table {}", r.dst, r.table),
        ));
    }
    if r.tos != 0 && backend != Backend::Ifupdown && backend != Backend::NetworkManager {
        return Err(unsupported(
            backend,
            format!("route {} table {} with tos {}", r.dst, r.table, r.tos),
        ));
    }
    if let Some(dev) = &r.dev {
        check_ifname(dev)?;
    }
    Ok(())
}

fn check_rule(r: &Rule, backend: Backend) -> Result<()> {
    let what = || format!("rule pref {}", r.priority);
    if r.action != RuleAction::ToTable || r.table == 0 {
        return Err(unsupported(
            backend,
            format!("{} (action {:?}): only table lookups", what(), r.action),
        ));
    }
    for n in [&r.iif, &r.oif].into_iter().flatten() {
        check_ifname(n)?;
    }
    match backend {
        Backend::Netplan => {
            if r.iif.is_some() || r.oif.is_some() || r.invert || r.suppress_prefixlen.is_some() {
                return Err(unsupported(
                    backend,
                    format!("{} with iif/oif/not/suppress_prefixlength", what()),
                ));
            }
            if r.fwmask.is_some_and(|m| m != u32::MAX) {
                return Err(unsupported(
                    backend,
                    format!("{} with a fwmark mask", what()),
                ));
            }
        }
        Backend::NetworkManager if r.invert => {
            return Err(unsupported(backend, format!("{} with `not`", what())));
        }
        _ => {}
    }
    Ok(())
}

fn route_owner(d: &DesiredState, r: &Route) -> Result<usize> {
    let by = |f: &dyn Fn(&NicDesired) -> bool| d.nics.iter().position(f);
    let found = match &r.dev {
        Some(dev) => by(&|n| &n.ifname == dev),
        None => r
            .prefsrc
            .and_then(|src| by(&|n| n.has_address(src)))
            .or_else(|| by(&|n| n.table == r.table)),
    };
    found.ok_or_else(|| {
        Error::new(
            ErrorKind::InvalidInput,
            format!(
                "route {} table {} (dev {}) belongs to none of the NICs in the desired state; \
                 every persisted route must name one of them as its device",
                r.dst,
                r.table,
                r.dev.as_deref().unwrap_or("-")
            ),
        )
    })
}

fn rule_owner(d: &DesiredState, r: &Rule) -> Result<usize> {
    let by = |f: &dyn Fn(&NicDesired) -> bool| d.nics.iter().position(f);
    let found = r
        .src
        .and_then(|s| by(&|n| n.addresses.iter().any(|a| s.contains(&a.addr()))))
        .or_else(|| {
            let dev = r.iif.as_ref().or(r.oif.as_ref())?;
            by(&|n| &n.ifname == dev)
        })
        .or_else(|| by(&|n| n.table == r.table));
    found.ok_or_else(|| {
        Error::new(
            ErrorKind::InvalidInput,
            format!(
                "rule pref {} (table {}) cannot be tied to any NIC in the desired state \
                 (no matching source address, iif/oif or table)",
                r.priority, r.table
            ),
        )
    })
}

/// `/etc/sysctl.d/90-roce-net.conf`.
pub(crate) fn render_sysctl(d: &DesiredState) -> Result<RenderedFile> {
    let mut s = String::new();
    s.push_str(HEADER);
    s.push('\n');
    s.push_str(
        "# Interface names containing dots are written with '/' (sysctl.d(5)): \
         net.ipv4.conf.eth0/100.rp_filter\n\
         # means /proc/sys/net/ipv4/conf/eth0.100/rp_filter.\n",
    );
    for (key, value) in &d.sysctls {
        if let crate::model::Sysctl::Conf {
            target: crate::model::ConfTarget::Interface(n),
            ..
        } = key
        {
            check_ifname(n)?;
        }
        let v = value.split_whitespace().collect::<Vec<_>>().join(" ");
        if v.is_empty() || v.contains('=') || v.contains('#') {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!("sysctl {key} has value {value:?}, which cannot be written to sysctl.d"),
            ));
        }
        let _ = writeln!(s, "{} = {}", key.display_name(), v);
    }
    Ok(RenderedFile {
        path: PathBuf::from(SYSCTL_PATH),
        content: s,
        mode: 0o644,
        note: Some(
            "systemd-sysctl applies this at boot and, through systemd's udev rule, again for \
             each interface when it appears; run `sysctl --system` to load it now."
                .into(),
        ),
    })
}

/// `rt_tables.d` and `rt_protos.d` drop-ins.
pub(crate) fn render_names(d: &DesiredState) -> Result<Vec<RenderedFile>> {
    let mut out = Vec::new();
    // The names file has one owner (rt_tables): its header and name rules are
    // the ones apply's writer uses, so apply and persist agree on every name.
    let t = crate::rt_tables::render_names_file(&d.table_names)?;
    out.push(RenderedFile {
        path: PathBuf::from(RT_TABLES_PATH),
        content: t,
        mode: 0o644,
        note: None,
    });
    if d.protocol != 0 {
        let mut p = String::new();
        p.push_str(HEADER);
        p.push_str("\n# The routing protocol number that marks roce-net's routes and rules.\n");
        let _ = writeln!(p, "{}\t{}", d.protocol, PROTOCOL_NAME);
        out.push(RenderedFile {
            path: PathBuf::from(RT_PROTOS_PATH),
            content: p,
            mode: 0o644,
            note: Some(
                "iproute2 versions without rt_protos.d support ignore this file and show the \
                 number instead of the name; nothing else depends on it."
                    .into(),
            ),
        });
    }
    Ok(out)
}

/// Quote for POSIX sh with single quotes.
pub(crate) fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}
