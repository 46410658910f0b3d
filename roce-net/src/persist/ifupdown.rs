//! Debian ifupdown: hook scripts in `if-up.d` / `if-down.d`.
//!
//! Why hooks and not `post-up` lines: `post-up` belongs inside the `iface` stanza
//! that the administrator already wrote in `/etc/network/interfaces`, and ifupdown
//! does not merge a second stanza for the same interface from `interfaces.d`. A hook
//! is run (through run-parts) for every interface, with its name in `$IFACE`, so it
//! can apply one NIC's routes and rules and exit 0 for every other interface.

use super::common::{sh_quote, Layout, HEADER};
use super::{RenderOptions, RenderedFile, IFDOWN_HOOK_PATH, IFUP_HOOK_PATH};
use crate::error::{Error, ErrorKind, Result};
use crate::model::Family;
use crate::plan::DesiredState;
use std::fmt::Write as _;
use std::path::PathBuf;

/// The read side: what this stack's configuration on the node claims.
pub(super) mod read;

fn fam(f: Family) -> &'static str {
    match f {
        Family::Inet => "-4",
        Family::Inet6 => "-6",
    }
}

pub(crate) fn render(
    d: &DesiredState,
    layout: &Layout<'_>,
    opts: &RenderOptions,
) -> Result<Vec<RenderedFile>> {
    let mut up = String::new();
    let mut down = String::new();
    for (s, what) in [(&mut up, "after"), (&mut down, "before")] {
        s.push_str("#!/bin/sh\n");
        s.push_str(HEADER);
        s.push('\n');
        let _ = writeln!(
            s,
            "# ifupdown runs this through run-parts {what} it changes any interface, with the\n\
             # interface name in $IFACE. It handles only the NICs roce-net manages and exits 0\n\
             # for every other interface. (A hook instead of post-up lines, because ifupdown\n\
             # does not accept a second iface stanza for an interface defined elsewhere.)\n\
             # Failures are reported on stderr but do not fail ifup/ifdown."
        );
        s.push_str("PATH=/usr/sbin:/usr/bin:/sbin:/bin\n");
    }
    up.push_str("[ \"${MODE:-start}\" = start ] || exit 0\nrc=0\ncase \"${IFACE:-}\" in\n");
    down.push_str("[ \"${MODE:-stop}\" = stop ] || exit 0\ncase \"${IFACE:-}\" in\n");
    for item in &layout.nics {
        if item.routes.is_empty() && item.rules.is_empty() {
            continue;
        }
        let ifname = &item.nic.ifname;
        if !opts.ifupdown_ifaces.contains(ifname) {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!(
                    "{ifname} has no `iface` stanza in the node's ifupdown configuration \
                     (/etc/network/interfaces and what it sources): ifupdown never runs hooks \
                     for it, so roce-net's routes and rules would never be applied; define it \
                     there first, or persist with the stack that configures it"
                ),
            ));
        }
        let _ = writeln!(up, "{})", sh_quote(ifname));
        let _ = writeln!(down, "{})", sh_quote(ifname));
        for r in &item.routes {
            // The route's own iproute2 syntax (model Display), on the NIC and
            // with roce-net's protocol, so ownership survives a reboot.
            let mut owned = (*r).clone();
            owned.dev.get_or_insert_with(|| ifname.clone());
            owned.protocol = d.protocol;
            let args = owned.to_string();
            let _ = writeln!(up, "\tip {} route replace {args} || rc=1", fam(r.family));
            let _ = writeln!(
                down,
                "\tip {} route del {args} 2>/dev/null || true",
                fam(r.family)
            );
        }
        for r in &item.rules {
            let mut owned = (*r).clone();
            owned.protocol = d.protocol;
            let args = owned.to_string();
            // Delete first so that running the hook again does not stack duplicates.
            let _ = writeln!(
                up,
                "\tip {} rule del {args} 2>/dev/null\n\tip {} rule add {args} || rc=1",
                fam(r.family),
                fam(r.family)
            );
            let _ = writeln!(
                down,
                "\tip {} rule del {args} 2>/dev/null || true",
                fam(r.family)
            );
        }
        up.push_str("\t;;\n");
        down.push_str("\t;;\n");
    }
    up.push_str(
        "*)\n\texit 0\n\t;;\nesac\n\
         [ \"$rc\" = 0 ] || echo \"roce-net: some routes or rules for $IFACE could not be applied\" >&2\n\
         exit 0\n",
    );
    down.push_str("*)\n\texit 0\n\t;;\nesac\nexit 0\n");
    let note = "ifupdown runs these for interfaces it brings up or down (auto/allow-hotplug \
                stanzas); interfaces it does not manage never trigger them. Applies at the next \
                `ifup`, or run `IFACE=<ifname> MODE=start /etc/network/if-up.d/roce-net`.";
    Ok(vec![
        RenderedFile {
            path: PathBuf::from(IFUP_HOOK_PATH),
            content: up,
            mode: 0o755,
            note: Some(note.into()),
        },
        RenderedFile {
            path: PathBuf::from(IFDOWN_HOOK_PATH),
            content: down,
            mode: 0o755,
            note: None,
        },
    ])
}
