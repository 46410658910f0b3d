//! What the hosts of a fleet agree on, and how a finding says it.
//!
//! Each cross-host check groups the hosts (or NICs) by one value. When one value
//! is held by more of them than any other, the ones with another value are the
//! odd ones out, and the finding says how many share the common value ("most
//! hosts (3 of 4) have 4" only when more than half do; "2 of 5 hosts have 4,
//! more than any other value" when it is only the most common). When two or
//! more values tie for most common (a 4-NIC host beside an 8-NIC one), nothing
//! says which side is right: no majority is claimed, every host is named, and
//! the finding shows how the fleet is split.

use serde_json::{json, Value};
use std::collections::BTreeMap;

/// At most this many groups are listed when a finding shows how the fleet is split.
const MAX_GROUPS_SHOWN: usize = 6;
/// A group of at most this many members is listed by name.
const MAX_NAMES_SHOWN: usize = 3;

/// What the members (hosts, or NICs) agree on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Consensus<T> {
    /// `value` is held by `count` of `total` members, more than any other value.
    Common {
        /// The most common value.
        value: T,
        /// How many members hold it.
        count: usize,
        /// How many members there are.
        total: usize,
    },
    /// Two or more values are each held by the most members: no side wins.
    Tie {
        /// The values tied for most common, in order.
        values: Vec<T>,
    },
}

impl<T: Ord + Clone> Consensus<T> {
    /// The consensus of `values` (`None` when there are none).
    pub(super) fn of<'a>(values: impl IntoIterator<Item = &'a T>) -> Option<Consensus<T>>
    where
        T: 'a,
    {
        let mut count: BTreeMap<&T, usize> = BTreeMap::new();
        let mut total = 0;
        for v in values {
            *count.entry(v).or_default() += 1;
            total += 1;
        }
        let best = count.values().copied().max()?;
        let top: Vec<T> = count
            .iter()
            .filter(|(_, c)| **c == best)
            .map(|(v, _)| (*v).clone())
            .collect();
        Some(match <[T; 1]>::try_from(top) {
            Ok([value]) => Consensus::Common {
                value,
                count: best,
                total,
            },
            Err(values) => Consensus::Tie { values },
        })
    }

    /// The most common value, when one is.
    pub(super) fn common(&self) -> Option<&T> {
        match self {
            Consensus::Common { value, .. } => Some(value),
            Consensus::Tie { .. } => None,
        }
    }

    /// Whether `v` is the most common value (false for every value on a tie).
    pub(super) fn is_common(&self, v: &T) -> bool {
        self.common() == Some(v)
    }

    /// Whether any member differs from the others: a tie, or members without
    /// the most common value.
    pub(super) fn disagrees(&self) -> bool {
        match self {
            Consensus::Common { count, total, .. } => count < total,
            Consensus::Tie { .. } => true,
        }
    }

    /// The evidence a finding carries about the consensus: `majority` (held
    /// by more than half of the members) and `most_common` (held by more members
    /// than any other value), each only when there is one; on a tie, `tied`:
    /// the values tied for most common.
    pub(super) fn evidence(&self, show: impl Fn(&T) -> Value) -> Vec<(&'static str, Value)> {
        match self {
            Consensus::Common {
                value,
                count,
                total,
            } => {
                let mut v = vec![("most_common", show(value))];
                if count * 2 > *total {
                    v.push(("majority", show(value)));
                }
                v
            }
            Consensus::Tie { values } => {
                vec![("tied", Value::Array(values.iter().map(show).collect()))]
            }
        }
    }

    /// How the members stand, for a finding's message: "most hosts (3 of 4)
    /// have 4", "2 of 5 hosts have 4, more than any other value", or on a tie
    /// "no value is held by more hosts than the others (4: gpu1, gpu2; 8: gpu3,
    /// gpu4)". `members` names the members in the plural ("hosts", "NICs on
    /// 198.18.0.0/24"); `by_member` is every member's value, by name.
    pub(super) fn says<K: AsRef<str>>(
        &self,
        members: &str,
        by_member: &BTreeMap<K, T>,
        show: impl Fn(&T) -> String,
    ) -> String {
        match self {
            Consensus::Common {
                value,
                count,
                total,
            } if count * 2 > *total => {
                format!("most {members} ({count} of {total}) have {}", show(value))
            }
            Consensus::Common {
                value,
                count,
                total,
            } => format!(
                "{count} of {total} {members} have {}, more than any other value (no majority)",
                show(value)
            ),
            Consensus::Tie { .. } => format!(
                "no value is held by more {members} than the others, so none is taken as \
                 right ({})",
                split(by_member, &show)
            ),
        }
    }
}

/// The members grouped by value: "4: gpu1, gpu2; 8: gpu3" (a group of more than
/// [`MAX_NAMES_SHOWN`] members by its size, at most [`MAX_GROUPS_SHOWN`] groups).
pub(super) fn split<K: AsRef<str>, T: Ord>(
    by_member: &BTreeMap<K, T>,
    show: impl Fn(&T) -> String,
) -> String {
    let mut groups: BTreeMap<&T, Vec<&str>> = BTreeMap::new();
    for (k, v) in by_member {
        groups.entry(v).or_default().push(k.as_ref());
    }
    let n = groups.len();
    let mut parts: Vec<String> = groups
        .into_iter()
        .take(MAX_GROUPS_SHOWN)
        .map(|(v, names)| {
            if names.len() <= MAX_NAMES_SHOWN {
                format!("{}: {}", show(v), names.join(", "))
            } else {
                format!("{}: {} of them", show(v), names.len())
            }
        })
        .collect();
    if n > MAX_GROUPS_SHOWN {
        parts.push(format!("and {} other values", n - MAX_GROUPS_SHOWN));
    }
    parts.join("; ")
}

/// Which side of the others a count is on: below every other value it is
/// compared with, above every one, or neither.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Side {
    /// Fewer than each of the others.
    Fewer,
    /// More than each of the others.
    More,
    /// Between them.
    Between,
}

/// The side `value` is on against the most common value, or on a tie against
/// every tied value other than its own.
pub(super) fn side(value: usize, consensus: &Consensus<usize>) -> Side {
    let others: Vec<usize> = match consensus {
        Consensus::Common { value: c, .. } => vec![*c],
        Consensus::Tie { values } => values.iter().copied().filter(|v| *v != value).collect(),
    };
    if others.iter().all(|o| value < *o) {
        Side::Fewer
    } else if others.iter().all(|o| value > *o) {
        Side::More
    } else {
        Side::Between
    }
}

/// [`Consensus::evidence`] for a count.
pub(super) fn count_evidence(c: &Consensus<usize>) -> Vec<(&'static str, Value)> {
    c.evidence(|v| json!(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(v: &[usize]) -> Consensus<usize> {
        Consensus::of(v).unwrap()
    }

    #[test]
    fn a_majority_is_claimed_only_where_more_than_half_agree() {
        let names = |v: &[usize]| -> BTreeMap<String, usize> {
            v.iter()
                .enumerate()
                .map(|(i, x)| (format!("h{i}"), *x))
                .collect()
        };
        let c = of(&[4, 4, 8]);
        assert_eq!(
            c.says("hosts", &names(&[4, 4, 8]), |v| v.to_string()),
            "most hosts (2 of 3) have 4"
        );
        assert_eq!(side(8, &c), Side::More);
        assert_eq!(side(2, &c), Side::Fewer);
        let c = of(&[4, 4, 6, 8]);
        assert!(c
            .says("hosts", &names(&[4, 4, 6, 8]), |v| v.to_string())
            .starts_with("2 of 4 hosts have 4, more than any other value (no majority)"));
        assert_eq!(c.evidence(|v| json!(v)), vec![("most_common", json!(4))]);
        // A 1:1 tie: nobody is right, both are named.
        let c = of(&[8, 4]);
        assert_eq!(c, Consensus::Tie { values: vec![4, 8] });
        assert_eq!(c.common(), None);
        assert!(c.disagrees());
        assert_eq!(
            c.says("hosts", &names(&[4, 8]), |v| v.to_string()),
            "no value is held by more hosts than the others, so none is taken as right \
             (4: h0; 8: h1)"
        );
        assert_eq!(side(4, &c), Side::Fewer);
        assert_eq!(side(8, &c), Side::More);
        assert_eq!(side(6, &of(&[4, 4, 8, 8, 6])), Side::Between);
        assert!(!of(&[4, 4]).disagrees());
        assert!(Consensus::<usize>::of(&[]).is_none());
    }

    #[test]
    fn a_split_fleet_is_shown_bounded() {
        let by: BTreeMap<String, usize> = (0..40).map(|i| (format!("h{i:02}"), i % 8)).collect();
        let s = split(&by, |v| v.to_string());
        assert!(s.starts_with("0: 5 of them; 1: 5 of them"), "{s}");
        assert!(s.ends_with("and 2 other values"), "{s}");
    }
}
