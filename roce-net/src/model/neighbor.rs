use super::table::IpVerb;
use super::HwAddr;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::net::IpAddr;

/// One bit of a neighbour entry's state (`NUD_*`), named as `ip neigh` prints it.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "UPPERCASE")]
pub enum NeighState {
    /// Resolution in progress.
    Incomplete,
    /// Confirmed reachable.
    Reachable,
    /// Valid but not confirmed recently.
    Stale,
    /// Waiting before probing.
    Delay,
    /// Being probed.
    Probe,
    /// Resolution failed.
    Failed,
    /// No ARP needed on this device.
    Noarp,
    /// Static entry.
    Permanent,
}

impl NeighState {
    /// Every state with its `NUD_*` bit.
    pub const ALL: [(NeighState, u16); 8] = [
        (NeighState::Incomplete, 0x01),
        (NeighState::Reachable, 0x02),
        (NeighState::Stale, 0x04),
        (NeighState::Delay, 0x08),
        (NeighState::Probe, 0x10),
        (NeighState::Failed, 0x20),
        (NeighState::Noarp, 0x40),
        (NeighState::Permanent, 0x80),
    ];

    /// Decode a `NUD_*` bitmask.
    pub fn from_bits(bits: u16) -> Vec<NeighState> {
        Self::ALL
            .iter()
            .filter(|(_, b)| bits & b != 0)
            .map(|(s, _)| *s)
            .collect()
    }

    /// Encode states into a `NUD_*` bitmask.
    pub fn to_bits(states: &[NeighState]) -> u16 {
        Self::ALL
            .iter()
            .filter(|(s, _)| states.contains(s))
            .fold(0, |acc, (_, b)| acc | b)
    }
}

/// A neighbour (ARP / NDP) table entry.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct Neighbor {
    /// Interface name.
    pub ifname: String,
    /// Interface index.
    pub ifindex: u32,
    /// The neighbour's IP address.
    pub ip: IpAddr,
    /// The link-layer address learned, if any.
    pub mac: Option<HwAddr>,
    /// State bits.
    pub state: Vec<NeighState>,
    /// The neighbour is a router (`NTF_ROUTER`).
    #[serde(default)]
    pub router: bool,
}

impl Neighbor {
    /// True when the entry holds a usable (or recently used) link-layer address:
    /// not INCOMPLETE or FAILED, and a MAC present.
    pub fn is_resolved(&self) -> bool {
        self.mac.is_some()
            && !self
                .state
                .iter()
                .any(|s| matches!(s, NeighState::Incomplete | NeighState::Failed))
    }
}

impl NeighState {
    /// The name `ip neigh` prints (`REACHABLE`); lower-cased it is `nud`'s argument.
    pub fn name(self) -> &'static str {
        match self {
            NeighState::Incomplete => "INCOMPLETE",
            NeighState::Reachable => "REACHABLE",
            NeighState::Stale => "STALE",
            NeighState::Delay => "DELAY",
            NeighState::Probe => "PROBE",
            NeighState::Failed => "FAILED",
            NeighState::Noarp => "NOARP",
            NeighState::Permanent => "PERMANENT",
        }
    }
}

impl fmt::Display for NeighState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for Neighbor {
    /// As `ip neigh` prints it: `198.18.0.100 dev r2 lladdr 02:00:00:00:01:02 STALE`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} dev {}", self.ip, super::ifname_word(&self.ifname))?;
        if let Some(m) = &self.mac {
            write!(f, " lladdr {m}")?;
        }
        if self.router {
            f.write_str(" router")?;
        }
        for st in &self.state {
            write!(f, " {st}")?;
        }
        Ok(())
    }
}

impl Neighbor {
    /// The `ip` command for this entry: `ip neigh del 198.18.0.100 dev r2`, or
    /// (add/replace) `ip neigh replace 198.18.0.100 dev r2 lladdr 02:.. nud stale`
    /// with its first state.
    pub fn ip_command(&self, verb: IpVerb) -> String {
        let mut s = format!(
            "ip neigh {verb} {} dev {}",
            self.ip,
            super::ifname_word(&self.ifname)
        );
        if verb != IpVerb::Delete {
            if let Some(m) = &self.mac {
                s.push_str(&format!(" lladdr {m}"));
            }
            if self.router {
                s.push_str(" router");
            }
            if let Some(st) = self.state.first() {
                s.push_str(&format!(" nud {}", st.name().to_ascii_lowercase()));
            }
        }
        s
    }
}
