//! Active probes that show what the wire sees.
//!
//! [`probe_arp`] sends ARP requests like `arping -I <dev> <target>` and reports every
//! distinct MAC address that answers: more than one MAC for one address is ARP flux,
//! the classic multi-NIC RoCE failure. [`probe_nd`] does the same for an IPv6
//! address with neighbour solicitations (`nd.rs`). Probes run in the calling thread's network
//! namespace; [`Host::probe_arp`](crate::host::Host::probe_arp) runs one inside a
//! host's namespace. (These methods are defined here: probes use the host layer,
//! the host layer knows nothing of probes.)
//!
//! With the `verbs` feature, `rdma` runs RDMA traffic between two hosts
//! ([`Host::probe_rdma`](crate::host::Host::probe_rdma)), like `ib_write_bw`.

mod announce;
mod arp;
mod nd;
mod packet;
#[cfg(feature = "verbs")]
pub(crate) mod rdma;

pub(crate) use announce::announce_all;
pub use arp::{probe_arp, ArpProbeOptions, ArpProbeResult, ArpReply};
pub use nd::{probe_nd, NdProbeOptions, NdProbeResult, NdReply};

use crate::error::Result;
use crate::host::Host;

impl Host {
    /// Send ARP requests for `target` out of `dev` inside this host's namespace and
    /// report every distinct MAC that answers (see [`probe_arp`]). More than one MAC for
    /// one address is ARP flux as the wire sees it.
    pub fn probe_arp(
        &self,
        dev: &str,
        target: std::net::Ipv4Addr,
        opts: ArpProbeOptions,
    ) -> Result<ArpProbeResult> {
        self.target().run(|| probe_arp(dev, target, opts))
    }

    /// Send neighbour solicitations for `target` out of `dev` inside this
    /// host's namespace and report every distinct MAC advertised for it (see
    /// [`probe_nd`]): IPv6's [`Host::probe_arp`].
    pub fn probe_nd(
        &self,
        dev: &str,
        target: std::net::Ipv6Addr,
        opts: NdProbeOptions,
    ) -> Result<NdProbeResult> {
        self.target().run(|| probe_nd(dev, target, opts))
    }

    /// Probe RDMA to a `roce-net probe rdma --server` at `peer` (its TCP
    /// address): choose the device, port and GID from the source address,
    /// connect an RC queue pair, move data both ways, and report latency and
    /// bandwidth, or the failure with its likely cause. Runs in this host's
    /// namespace. `Err` only when the probe cannot start: bad options
    /// (`InvalidInput`), no such address or port (`NotFound`), or no RDMA here
    /// (`NoRdma`); an RDMA failure is a report with `ok: false`.
    #[cfg(feature = "verbs")]
    pub fn probe_rdma(
        &self,
        peer: std::net::IpAddr,
        opts: &crate::probe::rdma::RdmaProbeOptions,
    ) -> Result<crate::probe::rdma::RdmaProbeReport> {
        opts.validate()?;
        let state = self.snapshot()?;
        let mut o = opts.clone();
        o.verbs = self.own_verbs(&opts.verbs);
        let refresh = || self.snapshot().ok();
        self.target()
            .run(|| crate::probe::rdma::run_client(&state, peer, &o, &refresh))
    }

    /// Serve `probe rdma` clients from `opts.source` until `opts.clients`
    /// sessions ran or `opts.duration` passed; one report per session.
    #[cfg(feature = "verbs")]
    pub fn probe_rdma_server(
        &self,
        opts: &crate::probe::rdma::RdmaProbeOptions,
    ) -> Result<crate::probe::rdma::RdmaServerReport> {
        opts.validate()?;
        let state = self.snapshot()?;
        let mut o = opts.clone();
        o.verbs = self.own_verbs(&opts.verbs);
        let refresh = || self.snapshot().ok();
        self.target()
            .run(|| crate::probe::rdma::run_server(&state, &o, &refresh))
    }
}
