//! systemd-networkd: one drop-in per NIC next to its existing `.network` file, plus
//! a `networkd.conf.d` drop-in that stops networkd deleting foreign routes/rules.

use super::common::{Layout, HEADER};
use super::{RenderOptions, RenderedFile, NETWORKD_CONF_PATH};
use crate::error::{Error, ErrorKind, Result};
use crate::model::{Family, Route, Rule, Scope};
use crate::plan::DesiredState;
use std::fmt::Write as _;
use std::path::PathBuf;

/// The read side: what this stack's configuration on the node claims.
pub(super) mod read;

pub(crate) fn render(
    d: &DesiredState,
    layout: &Layout<'_>,
    opts: &RenderOptions,
) -> Result<Vec<RenderedFile>> {
    let mut out = vec![networkd_conf()];
    for item in &layout.nics {
        if item.routes.is_empty() && item.rules.is_empty() {
            continue;
        }
        let ifname = &item.nic.ifname;
        let Some(file) = opts.networkd_files.get(ifname) else {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!(
                    "no systemd-networkd .network file is known to configure {ifname}: a \
                     drop-in is only read next to the file networkd really matches, so \
                     roce-net does not guess one (find it with `networkctl status {ifname}`, \
                     Network File:, or let `roce-net persist` discover it)"
                ),
            ));
        };
        check_network_file(file)?;
        let mut s = String::new();
        s.push_str(HEADER);
        s.push('\n');
        let _ = writeln!(
            s,
            "# Routes and policy rules for {ifname} (table {} {}), merged into {file}.",
            item.nic.table, item.nic.table_name
        );
        for r in &item.routes {
            route_section(&mut s, r, d.protocol)?;
        }
        for r in &item.rules {
            rule_section(&mut s, r);
        }
        out.push(RenderedFile {
            path: PathBuf::from(format!(
                "/etc/systemd/network/{file}.d/{}",
                super::NETWORKD_DROPIN_NAME
            )),
            content: s,
            mode: 0o644,
            note: Some(format!(
                "merged into {file} (networkd reads drop-ins from /etc for a .network file in \
                 any of its directories); applies at the next `networkctl reload` or boot."
            )),
        });
    }
    Ok(out)
}

pub(crate) fn networkd_conf() -> RenderedFile {
    let mut s = String::new();
    s.push_str(HEADER);
    s.push('\n');
    s.push_str(
        "# By default systemd-networkd deletes every route and policy rule it did not\n\
         # configure itself (ManageForeignRoutes=yes, ManageForeignRoutingPolicyRules=yes)\n\
         # when it starts or reconfigures a link. That would remove the rules and routes\n\
         # roce-net applies at runtime. Note: this setting is global and also keeps\n\
         # foreign routes and rules of other tools.\n\
         [Network]\n\
         ManageForeignRoutingPolicyRules=no\n\
         ManageForeignRoutes=no\n",
    );
    RenderedFile {
        path: PathBuf::from(NETWORKD_CONF_PATH),
        content: s,
        mode: 0o644,
        note: Some(
            "needs systemd >= 249 (ManageForeignRoutingPolicyRules=); applies after \
             `systemctl restart systemd-networkd` or a reboot."
                .into(),
        ),
    }
}

fn check_network_file(f: &str) -> Result<()> {
    let ok = f.ends_with(".network")
        && f.len() > ".network".len()
        && f.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b'@' | b'+'));
    if ok {
        Ok(())
    } else {
        Err(Error::new(
            ErrorKind::InvalidInput,
            format!(
                "{f:?} is not a plain systemd-networkd .network file name (e.g. 10-eth0.network)"
            ),
        ))
    }
}

fn scope_name(r: &Route) -> Result<&'static str> {
    Ok(match r.scope {
        Scope::Universe => "global",
        Scope::Site => "site",
        Scope::Link => "link",
        Scope::Host => "host",
        Scope::Nowhere => "nowhere",
        Scope::Other(n) => {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!(
                    "route {} table {} has scope {n}, which systemd-networkd cannot express",
                    r.dst, r.table
                ),
            ))
        }
    })
}

fn route_section(s: &mut String, r: &Route, protocol: u8) -> Result<()> {
    s.push_str("\n[Route]\n");
    let _ = writeln!(s, "Destination={}", r.dst);
    if let Some(g) = r.gateway {
        let _ = writeln!(s, "Gateway={g}");
    }
    let _ = writeln!(s, "Table={}", r.table);
    if let Some(p) = r.prefsrc {
        let _ = writeln!(s, "PreferredSource={p}");
    }
    let _ = writeln!(s, "Scope={}", scope_name(r)?);
    let _ = writeln!(s, "Protocol={protocol}");
    if let Some(m) = r.metric {
        let _ = writeln!(s, "Metric={m}");
    }
    Ok(())
}

fn rule_section(s: &mut String, r: &Rule) {
    s.push_str("\n[RoutingPolicyRule]\n");
    if let Some(n) = r.src {
        let _ = writeln!(s, "From={n}");
    }
    if let Some(n) = r.dst {
        let _ = writeln!(s, "To={n}");
    }
    if r.src.is_none() && r.dst.is_none() && r.family == Family::Inet6 {
        s.push_str("Family=ipv6\n");
    }
    if let Some(i) = &r.iif {
        let _ = writeln!(s, "IncomingInterface={i}");
    }
    if let Some(o) = &r.oif {
        let _ = writeln!(s, "OutgoingInterface={o}");
    }
    if let Some(m) = r.fwmark {
        match r.fwmask {
            Some(k) => {
                let _ = writeln!(s, "FirewallMark={m}/{k}");
            }
            None => {
                let _ = writeln!(s, "FirewallMark={m}");
            }
        }
    }
    if r.tos != 0 {
        let _ = writeln!(s, "TypeOfService={}", r.tos);
    }
    if r.invert {
        s.push_str("InvertRule=yes\n");
    }
    let _ = writeln!(s, "Table={}", r.table);
    let _ = writeln!(s, "Priority={}", r.priority);
    if let Some(p) = r.suppress_prefixlen {
        let _ = writeln!(s, "SuppressPrefixLength={p}");
    }
}
