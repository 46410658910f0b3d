//! How routing tables are named when routes and rules are shown.

use std::collections::BTreeMap;
use std::fmt;

/// `RT_TABLE_UNSPEC` (0): reserved.
pub const RT_TABLE_UNSPEC: u32 = 0;
/// `RT_TABLE_DEFAULT` (253).
pub const RT_TABLE_DEFAULT: u32 = 253;
/// `RT_TABLE_MAIN` (254).
pub const RT_TABLE_MAIN: u32 = 254;
/// `RT_TABLE_LOCAL` (255).
pub const RT_TABLE_LOCAL: u32 = 255;

/// A routing table id as iproute2 writes it: the reserved tables by name
/// (`main`, `local`, `default`), every other by number. This is valid `ip`
/// syntax whatever the host's `rt_tables` say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TableId(pub u32);

impl fmt::Display for TableId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            RT_TABLE_MAIN => f.write_str("main"),
            RT_TABLE_LOCAL => f.write_str("local"),
            RT_TABLE_DEFAULT => f.write_str("default"),
            n => write!(f, "{n}"),
        }
    }
}

/// A route or rule shown with registered table names: `table roce_r1(1001)`,
/// `lookup roce_r1(1001)` (tables without a name as [`TableId`]). For reading,
/// e.g. plan diffs; the plain `Display` of [`super::Route`] and [`super::Rule`]
/// is the `ip` syntax. Made by `Route::with_table_names` / `Rule::with_table_names`.
#[derive(Debug, Clone, Copy)]
pub struct WithTableNames<'a, T> {
    pub(crate) item: &'a T,
    pub(crate) names: &'a BTreeMap<u32, String>,
}

/// One table as shown: `name(id)` when `names` has it, else [`TableId`].
pub(crate) struct TableText<'a> {
    pub(crate) id: u32,
    pub(crate) names: Option<&'a BTreeMap<u32, String>>,
}

impl fmt::Display for TableText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.names.and_then(|m| m.get(&self.id)) {
            Some(n) => write!(f, "{n}({})", self.id),
            None => write!(f, "{}", TableId(self.id)),
        }
    }
}

/// What an `ip` command does to one object (`ip route replace ...`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IpVerb {
    /// `add`: create; fails when it exists.
    Add,
    /// `replace`: create or overwrite (same key); safe to run twice.
    Replace,
    /// `del`: remove.
    Delete,
}

impl fmt::Display for IpVerb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IpVerb::Add => "add",
            IpVerb::Replace => "replace",
            IpVerb::Delete => "del",
        })
    }
}

/// `ip`'s family option for an object of this family (`-6 ` or nothing).
pub(crate) fn family_flag(f: super::Family) -> &'static str {
    match f {
        super::Family::Inet => "",
        super::Family::Inet6 => "-6 ",
    }
}
