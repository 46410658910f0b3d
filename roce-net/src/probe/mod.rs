//! Active probes that show what the wire sees.
//!
//! [`arp`] sends ARP requests like `arping -I <dev> <target>` and reports every
//! distinct MAC address that answers: more than one MAC for one address is ARP flux,
//! the classic multi-NIC RoCE failure. Probes run in the calling thread's network
//! namespace; [`Host::probe_arp`](crate::host::Host::probe_arp) runs one inside a
//! host's namespace.

mod arp;

pub use arp::{arp, ArpProbeOptions, ArpProbeResult, ArpReply};
