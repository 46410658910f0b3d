//! An RDMA port's logical state, physical state and link layer: the one table
//! from the kernel's numbers to the names sysfs prints
//! (`drivers/infiniband/core/sysfs.c`: `state_show`, `phys_state_to_str`,
//! `link_layer_show`), used by the sysfs reader, the verbs view and the RDMA
//! probe alike, and the one meaning of "active".
//!
//! Each type serializes as its sysfs name (`"ACTIVE"`, `"LinkUp"`,
//! `"Ethernet"`), so the snapshot's JSON is the text it always was; a name or
//! number outside the table is kept as `Other` (`"state 7"`, or the verbatim
//! text of an unexpected sysfs file) instead of being lost.

crate::named::named_enum! {
    /// A port's logical state (`enum ib_port_state`; sysfs `ports/<p>/state`).
    pub enum PortState (fn name, open "state") {
        /// `0: NOP`.
        Nop = 0 => "NOP",
        /// `1: DOWN`.
        Down = 1 => "DOWN",
        /// `2: INIT`.
        Init = 2 => "INIT",
        /// `3: ARMED`.
        Armed = 3 => "ARMED",
        /// `4: ACTIVE`: the port passes traffic.
        Active = 4 => "ACTIVE",
        /// `5: ACTIVE_DEFER`.
        ActiveDefer = 5 => "ACTIVE_DEFER",
    }
}

crate::named::named_enum! {
    /// A port's physical state (sysfs `ports/<p>/phys_state`; 0 means "not
    /// reported" and is read as unknown).
    pub enum PhysState (fn name, open "phys_state") {
        /// `1: Sleep`.
        Sleep = 1 => "Sleep",
        /// `2: Polling`.
        Polling = 2 => "Polling",
        /// `3: Disabled`.
        Disabled = 3 => "Disabled",
        /// `4: PortConfigurationTraining`.
        PortConfigurationTraining = 4 => "PortConfigurationTraining",
        /// `5: LinkUp`.
        LinkUp = 5 => "LinkUp",
        /// `6: LinkErrorRecovery`.
        LinkErrorRecovery = 6 => "LinkErrorRecovery",
        /// `7: Phy Test`.
        PhyTest = 7 => "Phy Test",
    }
}

crate::named::named_enum! {
    /// A port's link layer (sysfs `ports/<p>/link_layer`; libibverbs'
    /// `IBV_LINK_LAYER_*`, where 0, unspecified, is InfiniBand on old drivers).
    pub enum LinkLayer (fn name, open "link_layer") {
        /// InfiniBand (LID addressing).
        InfiniBand = 0 | 1 => "InfiniBand",
        /// Ethernet: RoCE.
        Ethernet = 2 => "Ethernet",
    }
}

impl PhysState {
    /// From `ibv_port_attr.phys_state`: 0 (not reported) is unknown.
    pub fn from_verbs(n: u8) -> Option<PhysState> {
        (n != 0).then(|| PhysState::from_number(u32::from(n)))
    }
}

/// The one meaning of an active port, for the doctor, the NCCL model, the
/// metrics and the RDMA probe: its logical state is `ACTIVE` (what NCCL's
/// `ncclIbInit` requires) and its physical state, when known, is `LinkUp`.
pub fn port_is_active(state: Option<&PortState>, phys: Option<&PhysState>) -> bool {
    state == Some(&PortState::Active) && phys.is_none_or(|p| *p == PhysState::LinkUp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_names_are_the_kernels() {
        let sysfs = [
            "0: NOP",
            "1: DOWN",
            "2: INIT",
            "3: ARMED",
            "4: ACTIVE",
            "5: ACTIVE_DEFER",
        ];
        for (n, text) in sysfs.iter().enumerate() {
            let (num, name) = text.split_once(": ").unwrap();
            assert_eq!(num, n.to_string());
            let s = PortState::from_number(n as u32);
            assert_eq!(s.name(), name);
            assert_eq!(PortState::from_name(name), s);
            assert!(!matches!(s, PortState::Other(_)), "{text}");
        }
        assert_eq!(PortState::from_number(9).name(), "state 9");
        assert_eq!(PhysState::from_verbs(5), Some(PhysState::LinkUp));
        assert_eq!(PhysState::from_verbs(0), None);
        assert_eq!(PhysState::from_verbs(7).unwrap().name(), "Phy Test");
        assert_eq!(LinkLayer::from_number(0), LinkLayer::InfiniBand);
        assert_eq!(LinkLayer::from_number(2), LinkLayer::Ethernet);
    }

    #[test]
    fn serialized_as_the_sysfs_text() {
        let s = serde_json::to_string(&PortState::ActiveDefer).unwrap();
        assert_eq!(s, "\"ACTIVE_DEFER\"");
        let back: PortState = serde_json::from_str("\"ACTIVE\"").unwrap();
        assert_eq!(back, PortState::Active);
        let odd: PortState = serde_json::from_str("\"weird text\"").unwrap();
        assert_eq!(odd, PortState::Other("weird text".into()));
        assert_eq!(serde_json::to_string(&odd).unwrap(), "\"weird text\"");
    }

    #[test]
    fn active_means_active_and_link_up_when_known() {
        let a = Some(&PortState::Active);
        assert!(port_is_active(a, Some(&PhysState::LinkUp)));
        assert!(port_is_active(a, None));
        assert!(!port_is_active(a, Some(&PhysState::Polling)));
        assert!(!port_is_active(Some(&PortState::ActiveDefer), None));
        assert!(!port_is_active(None, Some(&PhysState::LinkUp)));
    }
}
