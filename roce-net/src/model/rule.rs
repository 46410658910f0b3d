use super::table::{family_flag, IpVerb, TableText, WithTableNames};
use super::Family;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;

/// What a policy rule does when it matches (`FR_ACT_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RuleAction {
    /// Look the packet up in `table`.
    #[default]
    ToTable,
    /// Jump to the rule with priority `goto`.
    Goto,
    /// Do nothing.
    Nop,
    /// Drop silently.
    Blackhole,
    /// Drop with ICMP unreachable.
    Unreachable,
    /// Drop with ICMP prohibited.
    Prohibit,
    /// Any other action.
    Other,
}

impl RuleAction {
    /// From the kernel's `FR_ACT_*` number.
    pub fn from_u8(n: u8) -> RuleAction {
        match n {
            1 => RuleAction::ToTable,
            2 => RuleAction::Goto,
            3 => RuleAction::Nop,
            6 => RuleAction::Blackhole,
            7 => RuleAction::Unreachable,
            8 => RuleAction::Prohibit,
            _ => RuleAction::Other,
        }
    }
    /// The kernel's `FR_ACT_*` number.
    pub fn as_u8(self) -> u8 {
        match self {
            RuleAction::ToTable => 1,
            RuleAction::Goto => 2,
            RuleAction::Nop => 3,
            RuleAction::Blackhole => 6,
            RuleAction::Unreachable => 7,
            RuleAction::Prohibit => 8,
            RuleAction::Other => 0,
        }
    }
}

/// A routing policy rule (`ip rule`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct Rule {
    /// Address family.
    pub family: Family,
    /// Priority (`pref`); lower runs first.
    pub priority: u32,
    /// Source selector (`from`); `None` means all.
    pub src: Option<ipnet::IpNet>,
    /// Destination selector (`to`); `None` means all.
    pub dst: Option<ipnet::IpNet>,
    /// Input interface selector (`iif`).
    pub iif: Option<String>,
    /// Output interface selector (`oif`).
    pub oif: Option<String>,
    /// Firewall mark selector.
    pub fwmark: Option<u32>,
    /// Firewall mark mask.
    pub fwmask: Option<u32>,
    /// TOS selector.
    #[serde(default)]
    pub tos: u8,
    /// The selectors are inverted (`not`).
    #[serde(default)]
    pub invert: bool,
    /// Table to look up, always the full 32-bit `FRA_TABLE` value (0 when none).
    pub table: u32,
    /// Action.
    pub action: RuleAction,
    /// Target priority of a `goto` rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goto: Option<u32>,
    /// `suppress_prefixlength`: ignore routes with a prefix this short or shorter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suppress_prefixlen: Option<u32>,
    /// Protocol number of whoever installed the rule (`FRA_PROTOCOL`).
    pub protocol: u8,
}

impl fmt::Display for RuleAction {
    /// iproute2's word for the action (`lookup`, `goto`, `nop`, `blackhole`, ...).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RuleAction::ToTable => "lookup",
            RuleAction::Goto => "goto",
            RuleAction::Nop => "nop",
            RuleAction::Blackhole => "blackhole",
            RuleAction::Unreachable => "unreachable",
            RuleAction::Prohibit => "prohibit",
            RuleAction::Other => "action-other",
        })
    }
}

/// A prefix as `ip rule` writes it: a host prefix as the bare address.
struct Net<'a>(&'a ipnet::IpNet);

impl fmt::Display for Net<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.prefix_len() == self.0.max_prefix_len() {
            write!(f, "{}", self.0.addr())
        } else {
            write!(f, "{}", self.0)
        }
    }
}

/// Where a rule is looked for: family, priority and table. Rules equal by
/// [`Rule::same`] have equal keys (several different rules may share one: the
/// kernel keeps rules by their whole content).
///
/// With [`Rule::normalized`], the one definition of a rule's identity: the
/// planner matches rules by them, and apply's undo checks with them that the
/// rule it restores is there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RuleKey {
    /// Address family.
    pub family: Family,
    /// Priority (`pref`).
    pub priority: u32,
    /// Table looked up (0 when none).
    pub table: u32,
}

impl Rule {
    /// Where it is looked for: see [`RuleKey`].
    pub fn key(&self) -> RuleKey {
        RuleKey {
            family: self.family,
            priority: self.priority,
            table: self.table,
        }
    }

    /// The rule as compared: an absent mark, a full mask, a suppressor of
    /// `u32::MAX` and a `goto` target on a rule that does not jump all read
    /// as none (the kernel reports either for the same rule).
    pub fn normalized(&self) -> Rule {
        let mut r = self.clone();
        if r.fwmark == Some(0) {
            r.fwmark = None;
        }
        if r.fwmark.is_none() || r.fwmask == Some(u32::MAX) {
            r.fwmask = None;
        }
        if r.suppress_prefixlen == Some(u32::MAX) {
            r.suppress_prefixlen = None;
        }
        if r.action != RuleAction::Goto {
            r.goto = None;
        }
        r
    }

    /// Equal to `other` however absent marks, masks and suppressors were
    /// reported: the same rule.
    pub fn same(&self, other: &Rule) -> bool {
        self.normalized() == other.normalized()
    }

    /// `from all lookup <table>` at `priority`: an IPv4 rule with no selectors and
    /// protocol 0; add selectors with the builder methods below.
    ///
    /// ```
    /// # use roce_net::Rule;
    /// let r = Rule::lookup(1001, 1001).src("198.18.0.11/32".parse().unwrap()).protocol(201);
    /// assert_eq!(r.to_string(), "from 198.18.0.11 lookup 1001 pref 1001 proto 201");
    /// ```
    pub fn lookup(priority: u32, table: u32) -> Rule {
        Rule {
            family: Family::Inet,
            priority,
            src: None,
            dst: None,
            iif: None,
            oif: None,
            fwmark: None,
            fwmask: None,
            tos: 0,
            invert: false,
            table,
            action: RuleAction::ToTable,
            goto: None,
            suppress_prefixlen: None,
            protocol: 0,
        }
    }

    /// roce-net's source rule: `from <address> lookup <table> pref <priority>`
    /// (a host prefix, the family of the address).
    pub fn source(address: IpAddr, table: u32, priority: u32) -> Rule {
        Rule::lookup(priority, table).src(ipnet::IpNet::from(address))
    }

    /// With this address family.
    pub fn family(mut self, family: Family) -> Rule {
        self.family = family;
        self
    }

    /// With a source selector (`from`); the family follows the prefix.
    pub fn src(mut self, src: ipnet::IpNet) -> Rule {
        self.family = Family::of(&src.addr());
        self.src = Some(src);
        self
    }

    /// With a destination selector (`to`); the family follows the prefix.
    pub fn dst(mut self, dst: ipnet::IpNet) -> Rule {
        self.family = Family::of(&dst.addr());
        self.dst = Some(dst);
        self
    }

    /// With an input interface selector (`iif`).
    pub fn iif(mut self, name: &str) -> Rule {
        self.iif = Some(name.to_string());
        self
    }

    /// With an output interface selector (`oif`).
    pub fn oif(mut self, name: &str) -> Rule {
        self.oif = Some(name.to_string());
        self
    }

    /// With a firewall mark selector (and mask).
    pub fn fwmark(mut self, mark: u32, mask: Option<u32>) -> Rule {
        self.fwmark = Some(mark);
        self.fwmask = mask;
        self
    }

    /// With this action instead of a table lookup (the table becomes 0); for
    /// `goto`, use [`Rule::goto`].
    pub fn action(mut self, action: RuleAction) -> Rule {
        self.action = action;
        if action != RuleAction::ToTable {
            self.table = 0;
        }
        self
    }

    /// Jump to the rule at `target` instead of a table lookup.
    pub fn goto(mut self, target: u32) -> Rule {
        self.action = RuleAction::Goto;
        self.table = 0;
        self.goto = Some(target);
        self
    }

    /// With the protocol number of its owner (`FRA_PROTOCOL`).
    pub fn protocol(mut self, protocol: u8) -> Rule {
        self.protocol = protocol;
        self
    }

    /// The rule with registered table names shown (`lookup roce_r1(1001)`).
    pub fn with_table_names<'a>(
        &'a self,
        names: &'a BTreeMap<u32, String>,
    ) -> WithTableNames<'a, Rule> {
        WithTableNames { item: self, names }
    }

    /// The `ip` command that adds or deletes this rule:
    /// `ip rule add from 198.18.0.11 lookup 1001 pref 1001 proto 201` (`ip -6 rule
    /// ...` for IPv6). Rules have no `replace`: [`IpVerb::Replace`] renders `add`.
    pub fn ip_command(&self, verb: IpVerb) -> String {
        let verb = match verb {
            IpVerb::Replace => IpVerb::Add,
            v => v,
        };
        format!("ip {}rule {verb} {self}", family_flag(self.family))
    }

    fn write(
        &self,
        f: &mut fmt::Formatter<'_>,
        names: Option<&BTreeMap<u32, String>>,
    ) -> fmt::Result {
        if self.invert {
            f.write_str("not ")?;
        }
        match &self.src {
            Some(n) => write!(f, "from {}", Net(n))?,
            None => f.write_str("from all")?,
        }
        if let Some(n) = &self.dst {
            write!(f, " to {}", Net(n))?;
        }
        if self.tos != 0 {
            write!(f, " tos 0x{:02x}", self.tos)?;
        }
        if let Some(m) = self.fwmark.filter(|m| *m != 0) {
            write!(f, " fwmark 0x{m:x}")?;
            if let Some(mask) = self.fwmask.filter(|k| *k != u32::MAX) {
                write!(f, "/0x{mask:x}")?;
            }
        }
        if let Some(i) = &self.iif {
            write!(f, " iif {}", super::ifname_word(i))?;
        }
        if let Some(o) = &self.oif {
            write!(f, " oif {}", super::ifname_word(o))?;
        }
        match self.action {
            RuleAction::ToTable => write!(
                f,
                " lookup {}",
                TableText {
                    id: self.table,
                    names
                }
            )?,
            RuleAction::Goto => match self.goto {
                Some(g) => write!(f, " goto {g}")?,
                None => f.write_str(" goto ?")?,
            },
            a => write!(f, " {a}")?,
        }
        if let Some(p) = self.suppress_prefixlen.filter(|p| *p != u32::MAX) {
            write!(f, " suppress_prefixlength {p}")?;
        }
        write!(f, " pref {} proto {}", self.priority, self.protocol)
    }
}

impl fmt::Display for Rule {
    /// The rule in `ip rule` syntax, valid as `ip rule add` arguments, with `pref`
    /// and `proto` always shown and the table by number (reserved ones by name):
    /// `from 198.18.0.11 lookup 1001 pref 1001 proto 201`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write(f, None)
    }
}

impl fmt::Display for WithTableNames<'_, Rule> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.item.write(f, Some(self.names))
    }
}

#[cfg(test)]
mod identity_tests {
    use super::*;

    #[test]
    fn absent_marks_masks_and_suppressors_read_alike() {
        let a = Rule::lookup(1001, 1001).protocol(201);
        let mut b = a.clone();
        b.fwmark = Some(0);
        b.fwmask = Some(0xff);
        b.suppress_prefixlen = Some(u32::MAX);
        b.goto = Some(7);
        assert!(a.same(&b), "{a} / {b}");
        assert_eq!(a.key(), b.key());
        let marked = a.clone().fwmark(3, Some(u32::MAX));
        assert!(marked.same(&a.clone().fwmark(3, None)));
        assert!(!marked.same(&a.clone().fwmark(3, Some(0xf))));
        assert!(!a.same(&a.clone().protocol(4)));
        assert_eq!(a.key(), a.clone().oif("r0").key());
        assert_ne!(a.key(), Rule::lookup(1002, 1001).key());
        assert_ne!(a.key(), Rule::lookup(1001, 1002).key());
    }
}
