//! Active probes that show what the wire sees.
//!
//! [`arp`] sends ARP requests like `arping -I <dev> <target>` and reports every
//! distinct MAC address that answers: more than one MAC for one address is ARP flux,
//! the classic multi-NIC RoCE failure. Probes run in the calling thread's network
//! namespace; [`Host::probe_arp`](crate::host::Host::probe_arp) runs one inside a
//! host's namespace. (That method is defined here: probes use the host layer,
//! the host layer knows nothing of probes.)

mod arp;

pub use arp::{arp, ArpProbeOptions, ArpProbeResult, ArpReply};

use crate::error::Result;
use crate::host::Host;

impl Host {
    /// Send ARP requests for `target` out of `dev` inside this host's namespace and
    /// report every distinct MAC that answers (see [`arp`]). More than one MAC for
    /// one address is ARP flux as the wire sees it.
    pub fn probe_arp(
        &self,
        dev: &str,
        target: std::net::Ipv4Addr,
        opts: ArpProbeOptions,
    ) -> Result<ArpProbeResult> {
        self.target().run(|| arp(dev, target, opts))
    }
}
