//! Synchronous netlink (placeholder: filled in by the netlink work).
use crate::error::{Error, ErrorKind, Result};
use crate::model::{Address, Interface, Neighbor, Route, Rule};

/// A blocking rtnetlink socket.
#[derive(Debug)]
pub struct Netlink {}

impl Netlink {
    /// Open a socket in the calling thread's namespace.
    pub fn open() -> Result<Netlink> {
        Err(Error::new(
            ErrorKind::Unsupported,
            "netlink layer not built yet",
        ))
    }
    /// Dump links.
    pub fn links(&mut self) -> Result<Vec<Interface>> {
        Ok(Vec::new())
    }
    /// Dump addresses.
    pub fn addresses(&mut self, _ifs: &[Interface]) -> Result<Vec<Address>> {
        Ok(Vec::new())
    }
    /// Dump neighbours.
    pub fn neighbors(&mut self, _ifs: &[Interface]) -> Result<Vec<Neighbor>> {
        Ok(Vec::new())
    }
    /// Dump routes in every table.
    pub fn routes(&mut self, _ifs: &[Interface]) -> Result<Vec<Route>> {
        Ok(Vec::new())
    }
    /// Dump rules.
    pub fn rules(&mut self) -> Result<Vec<Rule>> {
        Ok(Vec::new())
    }
}
