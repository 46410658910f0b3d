//! Active probes that show what the wire sees.
//!
//! [`arp`] sends ARP requests like `arping -I <dev> <target>` and reports every
//! distinct MAC address that answers: more than one MAC for one address is ARP flux,
//! the classic multi-NIC RoCE failure. Probes run in the calling thread's network
//! namespace; [`Host::probe_arp`](crate::host::Host::probe_arp) runs one inside a
//! host's namespace.
//!
//! With the `verbs` feature, `rdma` runs RDMA traffic between two hosts
//! ([`Host::probe_rdma`](crate::host::Host::probe_rdma)), like `ib_write_bw`.

mod arp;
#[cfg(feature = "verbs")]
pub(crate) mod rdma;

pub use arp::{arp, ArpProbeOptions, ArpProbeResult, ArpReply};
