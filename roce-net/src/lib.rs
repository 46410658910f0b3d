//! roce-net: observe, diagnose and fix host networking on multi-NIC RoCE/RDMA servers.
//!
//! The flow reads top to bottom: [`observe`] a host into a [`model::HostState`],
//! diagnose it with [`doctor`], declare the desired state as a [`policy::Policy`],
//! [`plan`] the changes, [`apply`] them as a transaction or render them with
//! [`persist`], and derive NCCL settings with [`nccl`]. [`lab`] builds throwaway
//! network-namespace topologies for demos and tests.
//!
//! The library prints nothing and never exits the process.
#![deny(missing_docs)]

pub mod apply;
pub mod doctor;
pub mod error;
pub mod fib;
pub mod fleet;
pub mod lab;
pub mod model;
pub mod nccl;
pub mod netns;
pub mod observe;
pub mod persist;
pub mod plan;
pub mod policy;
pub mod probe;

pub use error::{Error, ErrorKind, Result};
pub use model::HostState;
pub use observe::Host;
