//! A NIC's QoS as DCB reports it over rtnetlink (`RTM_GETDCB`, IEEE 802.1Qaz/Qbb).
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How the NIC classifies received traffic into priorities.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Trust {
    /// By the VLAN tag's PCP bits (untagged RoCE traffic lands on priority 0).
    Pcp,
    /// By the IP header's DSCP, through the DSCP -> priority map.
    Dscp,
}

impl std::fmt::Display for Trust {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Trust::Pcp => "pcp",
            Trust::Dscp => "dscp",
        })
    }
}

/// One entry of the DCB APP table (`struct dcb_app`).
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
pub struct DcbApp {
    /// Selector (`IEEE_8021QAZ_APP_SEL_*`: 1 ethertype, 2 TCP/SCTP port, 3 UDP/DCCP
    /// port, 4 TCP/SCTP/UDP/DCCP port, 5 DSCP).
    pub selector: u8,
    /// The protocol value the selector matches (ethertype, port or DSCP).
    pub protocol: u16,
    /// The priority (0..7) it maps to.
    pub priority: u8,
}

/// The QoS a NIC reports through DCB (`DCB_CMD_IEEE_GET`).
///
/// `dcb_available == false` means the driver has no DCB support (the kernel
/// answers `EOPNOTSUPP`, as for veth): nothing else is known then, which is not an
/// error.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct Qos {
    /// The driver answers DCB requests.
    pub dcb_available: bool,
    /// Priorities (0..7) with priority flow control enabled (`ieee_pfc.pfc_en`),
    /// sorted; `None` when the driver reports no PFC.
    pub pfc_enabled: Option<Vec<u8>>,
    /// How many priorities can have PFC at once (`ieee_pfc.pfc_cap`).
    pub pfc_cap: Option<u8>,
    /// PFC frames requested per priority (`ieee_pfc.requests`, sent).
    pub pfc_requests: Vec<u64>,
    /// PFC frames indicated per priority (`ieee_pfc.indications`, received).
    pub pfc_indications: Vec<u64>,
    /// Priority -> traffic class (`ieee_ets.prio_tc`), when ETS is reported.
    pub prio_tc: Option<Vec<u8>>,
    /// Trust state: `dscp` when the APP table holds DSCP entries (mlx5 installs
    /// them exactly in DSCP trust, `mlx5e_dcbnl_dscp_app()`), else `pcp`.
    pub trust: Option<Trust>,
    /// DSCP -> priority, from the APP table's DSCP entries (selector 5).
    pub dscp_prio: BTreeMap<u8, u8>,
    /// The APP table's other entries.
    pub app: Vec<DcbApp>,
    /// DCBX mode bits (`DCB_ATTR_DCBX`: 0x1 LLD managed, 0x2 CEE, 0x4 IEEE, 0x8 static).
    pub dcbx: Option<u8>,
}

impl Qos {
    /// The answer for a netdev whose driver has no DCB support.
    pub fn not_available() -> Qos {
        Qos::default()
    }

    /// The priority RoCE v2 packets sent with IP traffic class `tc` (the TOS byte:
    /// DSCP << 2 | ECN) land on at this NIC, and how it was derived. In DSCP trust
    /// the DSCP map decides; in PCP trust the priority comes from the VLAN PCP,
    /// which for RoCE is the address handle's service level (`sl`, NCCL_IB_SL,
    /// default 0). `None` when DCB is not available or the map lacks the DSCP.
    pub fn priority_for_tc(&self, tc: u8, sl: u8) -> Option<u8> {
        if !self.dcb_available {
            return None;
        }
        match self.trust? {
            Trust::Dscp => self.dscp_prio.get(&(tc >> 2)).copied(),
            Trust::Pcp => Some(sl & 7),
        }
    }

    /// True when PFC is enabled on `prio`.
    pub fn pfc_on(&self, prio: u8) -> bool {
        self.pfc_enabled
            .as_ref()
            .map(|v| v.contains(&prio))
            .unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priority_of_a_traffic_class() {
        let mut q = Qos {
            dcb_available: true,
            pfc_enabled: Some(vec![3]),
            trust: Some(Trust::Dscp),
            ..Qos::default()
        };
        q.dscp_prio.insert(26, 3);
        q.dscp_prio.insert(0, 0);
        // NCCL_IB_TC=106: DSCP 26, ECN 2.
        assert_eq!(q.priority_for_tc(106, 0), Some(3));
        assert_eq!(q.priority_for_tc(0, 0), Some(0));
        assert_eq!(q.priority_for_tc(4, 0), None);
        q.trust = Some(Trust::Pcp);
        assert_eq!(q.priority_for_tc(106, 0), Some(0));
        assert_eq!(q.priority_for_tc(106, 3), Some(3));
        assert!(q.pfc_on(3) && !q.pfc_on(0));
        assert_eq!(Qos::not_available().priority_for_tc(106, 0), None);
    }
}
