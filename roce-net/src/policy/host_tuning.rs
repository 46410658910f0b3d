//! Tuning keys against the namespace a snapshot was taken in.
//!
//! `net.core.netdev_max_backlog`, `net.core.rmem_max`, `net.core.wmem_max` and
//! `net.ipv4.udp_mem` are host-wide: the kernel keeps one value for the whole
//! machine. In a network namespace other than the initial one it either does not
//! show them (`netdev_max_backlog` in `net_core_table` and `udp_mem` in
//! `ipv4_table` are registered for `init_net` only: net/core/sysctl_net_core.c,
//! net/ipv4/sysctl_net_ipv4.c) or shows them read-only (`rmem_max`/`wmem_max` on
//! 6.x kernels such as 6.18: their entries follow the "will set the values after
//! this to readonly in network namespaces" comment of `netns_core_table`; older
//! kernels such as 5.15 do not show them at all). Planning such a write used to
//! fail the apply halfway ("mixed state"); it is refused here, at plan time.

use super::{policy_err, Policy};
use crate::error::Result;
use crate::model::{HostState, SysctlAccess, TuningKey};

/// The policy field of a tuning key (`tuning.rmem_max`).
fn field(key: TuningKey) -> &'static str {
    match key {
        TuningKey::NetdevMaxBacklog => "tuning.netdev_max_backlog",
        TuningKey::RmemMax => "tuning.rmem_max",
        TuningKey::WmemMax => "tuning.wmem_max",
        TuningKey::UdpMem => "tuning.udp_mem",
    }
}

/// The text the policy asks `key` to be, `None` when it leaves `key` alone.
pub(crate) fn wanted(policy: &Policy, key: TuningKey) -> Option<String> {
    let t = &policy.tuning;
    match key {
        TuningKey::NetdevMaxBacklog => t.netdev_max_backlog.map(|v| v.to_string()),
        TuningKey::RmemMax => t.rmem_max.map(|v| v.to_string()),
        TuningKey::WmemMax => t.wmem_max.map(|v| v.to_string()),
        TuningKey::UdpMem => t.udp_mem.map(|[a, b, c]| format!("{a}\t{b}\t{c}")),
    }
}

/// Refuse tuning keys the snapshot's namespace cannot write. A read-only key that
/// already has the wanted value needs no write and is accepted. A snapshot that
/// did not record access (older roce-net) is not checked.
pub(super) fn check(policy: &Policy, host: &HostState) -> Result<()> {
    let Some(access) = &host.sysctls.tuning_access else {
        return Ok(());
    };
    let ns = match host.sysctls.initial_netns {
        Some(false) => "this snapshot was taken in a network namespace other than the initial one",
        _ => "this snapshot's namespace",
    };
    for key in TuningKey::ALL {
        let Some(want) = wanted(policy, key) else {
            continue;
        };
        let why = match access.get(&key).copied().unwrap_or(SysctlAccess::Absent) {
            SysctlAccess::Writable => continue,
            SysctlAccess::ReadOnly
                if host.sysctls.tuning.get_text(key).as_deref() == Some(&*want) =>
            {
                continue
            }
            SysctlAccess::ReadOnly => format!(
                "{} is host-wide, not per network namespace, and {ns}, where the kernel shows \
                 it read-only",
                key.dotted()
            ),
            SysctlAccess::Absent => format!(
                "{} is host-wide, not per network namespace, and {ns}, where the kernel does not \
                 show it",
                key.dotted()
            ),
        };
        return Err(policy_err(
            field(key),
            format!(
                "{why}; set it in the initial namespace (the host itself) or remove {} from \
                 the policy applied here; nothing was planned",
                field(key)
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;
    use std::collections::BTreeMap;

    fn host(access: [SysctlAccess; 4], initial: bool) -> HostState {
        let mut h = HostState::empty("h");
        h.sysctls.initial_netns = Some(initial);
        h.sysctls.tuning.rmem_max = Some(4194304);
        h.sysctls.tuning_access = Some(
            TuningKey::ALL
                .into_iter()
                .zip(access)
                .collect::<BTreeMap<_, _>>(),
        );
        h
    }

    #[test]
    fn host_wide_keys_are_refused_in_a_child_namespace() {
        use SysctlAccess::*;
        // TuningKey::ALL order: netdev_max_backlog, rmem_max, wmem_max, udp_mem.
        let child = host([Absent, ReadOnly, ReadOnly, Absent], false);
        let mut p = Policy::default();
        p.tuning.rmem_max = Some(8 << 20);
        let e = check(&p, &child).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Policy);
        let m = e.to_string();
        assert!(
            m.starts_with("tuning.rmem_max:") && m.contains("read-only"),
            "{m}"
        );
        assert!(m.contains("not per network namespace"), "{m}");

        let mut p = Policy::default();
        p.tuning.udp_mem = Some([1, 2, 3]);
        let m = check(&p, &child).unwrap_err().to_string();
        assert!(
            m.starts_with("tuning.udp_mem:") && m.contains("does not show it"),
            "{m}"
        );

        // The value it already has needs no write.
        let mut p = Policy::default();
        p.tuning.rmem_max = Some(4194304);
        check(&p, &child).unwrap();

        // The initial namespace may tune everything.
        let init = host([Writable; 4], true);
        let mut p = Policy::default();
        p.tuning.udp_mem = Some([1, 2, 3]);
        p.tuning.netdev_max_backlog = Some(5000);
        check(&p, &init).unwrap();
        // An old snapshot without the record is not judged.
        let mut old = HostState::empty("h");
        old.sysctls.tuning_access = None;
        check(&p, &old).unwrap();
    }
}
