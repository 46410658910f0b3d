//! netplan: one YAML file that adds routes and routing-policy entries to the
//! interfaces the existing netplan files define (netplan merges files by device ID).

use super::common::{Layout, NicItems, HEADER};
use super::{NetplanDevice, NetplanRenderer, RenderOptions, RenderedFile, NETPLAN_PATH};
use crate::error::{Error, ErrorKind, Result};
use crate::model::{Family, Route, Rule, Scope};
use crate::plan::DesiredState;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

/// The read side: what this stack's configuration on the node claims.
pub(super) mod read;

pub(crate) fn render(
    _d: &DesiredState,
    layout: &Layout<'_>,
    opts: &RenderOptions,
) -> Result<Vec<RenderedFile>> {
    // kind -> [(device, items)], both in a stable order.
    let mut by_kind: BTreeMap<String, Vec<(&NetplanDevice, &NicItems<'_>)>> = BTreeMap::new();
    for item in &layout.nics {
        if item.routes.is_empty() && item.rules.is_empty() {
            continue;
        }
        let ifname = &item.nic.ifname;
        let Some(dev) = opts.netplan_devices.get(ifname) else {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!(
                    "{ifname} is not defined in the node's netplan configuration: a netplan \
                     file that defined it anew would hand it to the renderer with no addresses \
                     (networkd then removes the addresses it has), so roce-net only extends \
                     existing definitions; define {ifname} in /etc/netplan first, or persist \
                     with the stack that configures it"
                ),
            ));
        };
        check_key(&dev.kind)?;
        check_key(&dev.id)?;
        by_kind
            .entry(dev.kind.clone())
            .or_default()
            .push((dev, item));
    }
    let mut s = String::new();
    s.push_str(HEADER);
    s.push('\n');
    s.push_str(
        "# Adds per-NIC routes and policy rules to interfaces defined in the other files\n\
         # of /etc/netplan (netplan merges definitions with the same ID). It defines no\n\
         # interface, address, DHCP or match: rule, so it changes nothing else.\n\
         # Devices rendered by NetworkManager get their rules as keyfile passthrough:\n\
         # netplan 0.106 drops routing-policy for that renderer.\n\
         network:\n  version: 2\n",
    );
    let mut nm_devices = Vec::new();
    for (kind, devs) in &by_kind {
        let _ = writeln!(s, "  {kind}:");
        for (dev, item) in devs {
            let _ = writeln!(s, "    \"{}\":", dev.id);
            if !item.routes.is_empty() {
                s.push_str("      routes:\n");
                for r in &item.routes {
                    route_entry(&mut s, r, dev.renderer)?;
                }
            }
            if item.rules.is_empty() {
                continue;
            }
            match dev.renderer {
                NetplanRenderer::Networkd => {
                    s.push_str("      routing-policy:\n");
                    for r in &item.rules {
                        rule_entry(&mut s, r);
                    }
                }
                NetplanRenderer::NetworkManager => {
                    nm_devices.push(dev.id.clone());
                    s.push_str("      networkmanager:\n        passthrough:\n");
                    for r in &item.rules {
                        let fam = match r.family {
                            Family::Inet => "ipv4",
                            Family::Inet6 => "ipv6",
                        };
                        // The keyfile index is the priority: unique per family,
                        // stable, and far from the low indexes admins use.
                        let _ = writeln!(
                            s,
                            "          \"{fam}.routing-rule{}\": \"{}\"",
                            r.priority,
                            super::nm::rule_value(r)
                        );
                    }
                }
            }
        }
    }
    let mut note = String::from(
        "run `netplan generate` to check, then `netplan apply`. netplan cannot set a route \
         protocol: after a reboot the routes and rules carry the renderer's protocol \
         (static) instead of roce-net's number, which the planner accepts as its own. The \
         file must stay mode 0600.",
    );
    if !nm_devices.is_empty() {
        let _ = write!(
            note,
            " {} rendered by NetworkManager: their rules are passed through to the \
             generated keyfiles (networkmanager.passthrough), because netplan 0.106 drops \
             routing-policy for that renderer.",
            nm_devices.join(", ")
        );
    }
    let any_networkd = by_kind
        .values()
        .flatten()
        .any(|(d, _)| d.renderer == NetplanRenderer::Networkd);
    let mut out = vec![RenderedFile {
        path: PathBuf::from(NETPLAN_PATH),
        content: s,
        mode: 0o600,
        note: Some(note),
    }];
    if any_networkd {
        out.push(networkd_conf_for_netplan());
    }
    Ok(out)
}

/// netplan's default renderer is systemd-networkd, which deletes foreign routes and
/// rules; the same global drop-in as the networkd backend keeps roce-net's.
fn networkd_conf_for_netplan() -> RenderedFile {
    let mut f = super::networkd::networkd_conf();
    f.note = Some(
        "for the devices netplan renders to systemd-networkd (its default): keeps the \
         policy rules roce-net applies at runtime when networkd reconfigures a link."
            .into(),
    );
    f
}

fn check_key(s: &str) -> Result<()> {
    let ok = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b'@'));
    if ok {
        Ok(())
    } else {
        Err(Error::new(
            ErrorKind::InvalidInput,
            format!("netplan device section or ID {s:?} must use only A-Z a-z 0-9 . - _ @"),
        ))
    }
}

fn route_entry(s: &mut String, r: &Route, renderer: NetplanRenderer) -> Result<()> {
    let scope = match r.scope {
        // netplan (0.106) refuses a global unicast route without `via` ("global
        // unicast route must include both a 'to' and 'via' IP"), which every
        // IPv6 on-link route is. The kernel has no scope for IPv6 routes (it
        // ignores the one it is given), so `link` there changes nothing but
        // makes netplan accept the route.
        Scope::Universe if r.family == Family::Inet6 && r.gateway.is_none() => "link",
        Scope::Universe => "global",
        Scope::Link => "link",
        Scope::Host => "host",
        other => {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!(
                    "route {} table {} has scope {other}; netplan only knows global, link and host",
                    r.dst, r.table
                ),
            ))
        }
    };
    let _ = writeln!(s, "        - to: \"{}\"", r.dst);
    if let Some(g) = r.gateway {
        let _ = writeln!(s, "          via: \"{g}\"");
    }
    if let Some(p) = r.prefsrc {
        let _ = writeln!(s, "          from: \"{p}\"");
    }
    let _ = writeln!(s, "          scope: {scope}");
    let _ = writeln!(s, "          table: {}", r.table);
    // networkd gives a route without `Metric=` the kernel's default, as
    // planned; NetworkManager would give it the device's metric, so its
    // routes carry the one its own backend writes (nm::route_metric).
    let metric = match renderer {
        NetplanRenderer::Networkd => r.metric,
        NetplanRenderer::NetworkManager => Some(super::nm::route_metric(r)),
    };
    if let Some(m) = metric {
        let _ = writeln!(s, "          metric: {m}");
    }
    Ok(())
}

fn rule_entry(s: &mut String, r: &Rule) {
    let mut first = true;
    let mut field = |s: &mut String, k: &str, v: String| {
        let lead = if first { "        - " } else { "          " };
        first = false;
        let _ = writeln!(s, "{lead}{k}: {v}");
    };
    if let Some(n) = r.src {
        field(s, "from", format!("\"{n}\""));
    }
    if let Some(n) = r.dst {
        field(s, "to", format!("\"{n}\""));
    }
    field(s, "table", r.table.to_string());
    field(s, "priority", r.priority.to_string());
    if let Some(m) = r.fwmark {
        field(s, "mark", m.to_string());
    }
    if r.tos != 0 {
        field(s, "type-of-service", r.tos.to_string());
    }
}
