//! Policy rules: the order the kernel walks them in, what a rule matches, and
//! the walk itself with goto/nop/suppress (`fib_rules_lookup` in
//! `net/core/fib_rules.c`, `fib4_rule_match`/`fib4_rule_action` in
//! `net/ipv4/fib_rules.c`).

use super::table::{table_lookup, FibHit, TableResult};
use super::{unspecified, FibError, Flow};
use crate::model::{
    Family, HostState, Rule, RuleAction, RT_TABLE_DEFAULT, RT_TABLE_LOCAL, RT_TABLE_MAIN,
};

/// True when the IPv4 rules are exactly the kernel's defaults (or absent).
pub(crate) fn has_only_default_rules(state: &HostState) -> bool {
    let v4: Vec<&Rule> = state
        .rules
        .iter()
        .filter(|r| r.family == Family::Inet)
        .collect();
    if v4.is_empty() {
        return true;
    }
    let plain = |r: &Rule, prio: u32, table: u32| {
        r.priority == prio
            && r.table == table
            && r.action == RuleAction::ToTable
            && !r.invert
            && r.src.map(|n| n.prefix_len() == 0).unwrap_or(true)
            && r.dst.map(|n| n.prefix_len() == 0).unwrap_or(true)
            && r.iif.is_none()
            && r.oif.is_none()
            && r.fwmark.unwrap_or(0) == 0
            && r.fwmask.unwrap_or(0) == 0
            && r.tos == 0
            && r.suppress_prefixlen.map(|n| n > 128).unwrap_or(true)
    };
    let mut sorted = v4.clone();
    sorted.sort_by_key(|r| r.priority);
    sorted.len() == 3
        && plain(sorted[0], 0, RT_TABLE_LOCAL)
        && plain(sorted[1], 32766, RT_TABLE_MAIN)
        && plain(sorted[2], 32767, RT_TABLE_DEFAULT)
}

/// The rules of one family in evaluation order (the kernel's defaults when the
/// snapshot has none of that family).
pub fn rules_in_order(state: &HostState, family: Family) -> Vec<Rule> {
    let mut rules: Vec<Rule> = state
        .rules
        .iter()
        .filter(|r| r.family == family)
        .cloned()
        .collect();
    if rules.is_empty() {
        let mk = |priority: u32, table: u32| {
            Rule::lookup(priority, table)
                .family(family)
                .protocol(crate::model::protocol::KERNEL)
        };
        rules.push(mk(0, RT_TABLE_LOCAL));
        rules.push(mk(32766, RT_TABLE_MAIN));
        if family == Family::Inet {
            rules.push(mk(32767, RT_TABLE_DEFAULT));
        }
    }
    // Stable: equal priorities keep snapshot (kernel list) order.
    rules.sort_by_key(|r| r.priority);
    rules
}

/// True when `rule`'s selectors match `flow` (before `not` is applied the kernel
/// evaluates every selector; `not` inverts the result).
pub fn rule_matches(rule: &Rule, flow: &Flow) -> bool {
    let family = Family::of(&flow.dst);
    let raw = (|| {
        let iif = flow.iif.as_deref().unwrap_or("lo");
        if let Some(r_iif) = &rule.iif {
            if r_iif != iif {
                return false;
            }
        }
        if let Some(r_oif) = &rule.oif {
            if flow.oif.as_deref() != Some(r_oif.as_str()) {
                return false;
            }
        }
        let mark = rule.fwmark.unwrap_or(0);
        let mask = rule
            .fwmask
            .unwrap_or(if rule.fwmark.is_some() { u32::MAX } else { 0 });
        if (mark ^ flow.fwmark) & mask != 0 {
            return false;
        }
        if let Some(net) = &rule.src {
            if net.prefix_len() > 0 {
                match (flow.src, family) {
                    (Some(s), _) => {
                        if !net.contains(&s) {
                            return false;
                        }
                    }
                    // IPv4 compares the (zero) source against the prefix.
                    (None, Family::Inet) => {
                        if !net.contains(&unspecified(family)) {
                            return false;
                        }
                    }
                    // IPv6 needs RT6_LOOKUP_F_HAS_SADDR for a `from` match.
                    (None, Family::Inet6) => return false,
                }
            }
        }
        if let Some(net) = &rule.dst {
            if net.prefix_len() > 0 && !net.contains(&flow.dst) {
                return false;
            }
        }
        if rule.tos != 0 && rule.tos != flow.tos {
            return false;
        }
        true
    })();
    raw != rule.invert
}

/// `fib_rules_lookup`: walk the rules, look tables up, honour goto/nop/suppress.
pub(super) fn fib_lookup<'a>(state: &'a HostState, flow: &Flow) -> Result<FibHit<'a>, FibError> {
    let rules = rules_in_order(state, Family::of(&flow.dst));
    let mut i = 0;
    while i < rules.len() {
        let rule = &rules[i];
        i += 1;
        if !rule_matches(rule, flow) {
            continue;
        }
        match rule.action {
            RuleAction::Goto => {
                // The kernel only accepts forward gotos; ignoring any other keeps a
                // malformed snapshot from looping.
                if let Some(target) = rule.goto.filter(|t| *t > rule.priority) {
                    if let Some(t) = rules.iter().position(|r| r.priority == target) {
                        // The kernel re-evaluates the target rule itself next.
                        i = t;
                    }
                }
                continue;
            }
            RuleAction::Nop => continue,
            RuleAction::Blackhole | RuleAction::Other => return Err(FibError::Blackhole),
            RuleAction::Unreachable => return Err(FibError::Unreachable),
            RuleAction::Prohibit => return Err(FibError::Prohibit),
            RuleAction::ToTable => {}
        }
        match table_lookup(state, rule.table, flow) {
            TableResult::Again => continue,
            TableResult::Reject(e) => return Err(e),
            TableResult::Hit {
                route,
                prefix_len,
                dev,
                gateway,
            } => {
                if let Some(n) = rule.suppress_prefixlen {
                    if n <= 128 && u32::from(prefix_len) <= n {
                        continue;
                    }
                }
                return Ok(FibHit {
                    route,
                    table: rule.table,
                    rule_priority: Some(rule.priority),
                    dev,
                    gateway,
                });
            }
        }
    }
    Err(FibError::NoRoute)
}
