use super::Family;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
