//! DCB over rtnetlink (`RTM_GETDCB`, `DCB_CMD_IEEE_GET`): a NIC's PFC, ETS and
//! APP table as `dcb pfc show`/`dcb app show` (iproute2) or `mlnx_qos` read them.
//!
//! Layout (linux/dcbnl.h, net/dcb/dcbnl.c `dcbnl_ieee_fill`): a `struct dcbmsg`
//! (family, cmd, pad), then `DCB_ATTR_IFNAME`, a nested `DCB_ATTR_IEEE` holding
//! `DCB_ATTR_IEEE_ETS` (`struct ieee_ets`), `DCB_ATTR_IEEE_PFC` (`struct
//! ieee_pfc`), the nested `DCB_ATTR_IEEE_APP_TABLE` of `DCB_ATTR_IEEE_APP`
//! (`struct dcb_app`) entries and, on newer kernels, the nested
//! `DCB_ATTR_DCB_APP_TRUST_TABLE`; then `DCB_ATTR_DCBX`. A netdev whose driver
//! has no DCB operations is answered with `EOPNOTSUPP` (veth, most virtual
//! devices): that is "not available", not an error.

use super::Netlink;
use crate::error::{Error, ErrorKind, Result};
use crate::model::{DcbApp, Qos, Trust};

use libc::RTM_GETDCB;
const DCB_CMD_IEEE_GET: u8 = 21;
const DCB_ATTR_IFNAME: u16 = 1;
const DCB_ATTR_IEEE: u16 = 13;
const DCB_ATTR_DCBX: u16 = 14;
const DCB_ATTR_IEEE_ETS: u16 = 1;
const DCB_ATTR_IEEE_PFC: u16 = 2;
const DCB_ATTR_IEEE_APP_TABLE: u16 = 3;
const DCB_ATTR_DCB_APP_TRUST_TABLE: u16 = 11;
const DCB_ATTR_IEEE_APP: u16 = 1;
const DCB_ATTR_DCB_APP_TRUST: u16 = 1;
const SEL_DSCP: u8 = 5;
/// `DCB_APP_SEL_PCP` (non-IEEE selector for the PCP trust/APP entries).
const SEL_PCP: u8 = 255;
/// sizeof(struct ieee_pfc): pfc_cap, pfc_en, mbc, pad, delay (u16), pad, requests[8], indications[8].
const IEEE_PFC_LEN: usize = 136;
/// sizeof(struct ieee_ets); `prio_tc` is at offset 27.
const IEEE_ETS_LEN: usize = 59;
const ETS_PRIO_TC: usize = 27;

/// The well-formed netlink attributes of `b` as (type, payload)
/// ([`super::attr`]), up to the first malformed one.
fn attrs(b: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    super::attr::attributes(b)
        .map_while(Result::ok)
        .map(|a| (a.kind, a.value))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_ne_bytes(w)
}

/// Decode the payload (after the netlink header) of a `DCB_CMD_IEEE_GET` reply.
pub(crate) fn parse_ieee_reply(payload: &[u8]) -> std::result::Result<Qos, String> {
    if payload.len() < 4 {
        return Err(format!("reply of {} bytes has no dcbmsg", payload.len()));
    }
    if payload[1] != DCB_CMD_IEEE_GET {
        return Err(format!(
            "reply is for DCB command {}, not IEEE_GET",
            payload[1]
        ));
    }
    let mut q = Qos {
        dcb_available: true,
        ..Qos::default()
    };
    let mut trust_table: Option<Vec<u8>> = None;
    for (kind, body) in attrs(&payload[4..]) {
        match kind {
            DCB_ATTR_IEEE => {
                for (k, v) in attrs(body) {
                    match k {
                        DCB_ATTR_IEEE_PFC if v.len() >= IEEE_PFC_LEN => {
                            q.pfc_cap = Some(v[0]);
                            q.pfc_enabled =
                                Some((0..8u8).filter(|p| v[1] & (1 << p) != 0).collect());
                            q.pfc_requests = (0..8).map(|i| u64_at(v, 8 + 8 * i)).collect();
                            q.pfc_indications = (0..8).map(|i| u64_at(v, 72 + 8 * i)).collect();
                        }
                        DCB_ATTR_IEEE_ETS if v.len() >= IEEE_ETS_LEN => {
                            q.prio_tc = Some(v[ETS_PRIO_TC..ETS_PRIO_TC + 8].to_vec());
                        }
                        DCB_ATTR_IEEE_APP_TABLE => {
                            for (ak, app) in attrs(v) {
                                if app.len() < 4 || ak == 0 {
                                    continue;
                                }
                                let e = DcbApp {
                                    selector: app[0],
                                    priority: app[1],
                                    protocol: u16::from_ne_bytes([app[2], app[3]]),
                                };
                                if ak == DCB_ATTR_IEEE_APP && e.selector == SEL_DSCP {
                                    if let Ok(d) = u8::try_from(e.protocol) {
                                        q.dscp_prio.insert(d, e.priority);
                                    }
                                } else {
                                    q.app.push(e);
                                }
                            }
                        }
                        DCB_ATTR_DCB_APP_TRUST_TABLE => {
                            trust_table = Some(
                                attrs(v)
                                    .filter(|(t, p)| *t == DCB_ATTR_DCB_APP_TRUST && !p.is_empty())
                                    .map(|(_, p)| p[0])
                                    .collect(),
                            );
                        }
                        _ => {}
                    }
                }
            }
            DCB_ATTR_DCBX if !body.is_empty() => q.dcbx = Some(body[0]),
            _ => {}
        }
    }
    q.app.sort();
    // The trust table (dcbnl_getapptrust, Linux 6.3+) says it directly: the first
    // selector wins. Without it, mlx5 installs DSCP APP entries exactly in DSCP
    // trust ("No SEL_DSCP entry in non DSCP state", en_dcbnl.c
    // mlx5e_dcbnl_dscp_app()).
    q.trust = match trust_table.as_deref().and_then(|t| t.first()) {
        Some(&SEL_DSCP) => Some(Trust::Dscp),
        Some(&SEL_PCP) => Some(Trust::Pcp),
        _ => Some(if q.dscp_prio.is_empty() {
            Trust::Pcp
        } else {
            Trust::Dscp
        }),
    };
    Ok(q)
}

impl Netlink {
    /// A netdev's DCB QoS (`DCB_CMD_IEEE_GET`). Drivers without DCB support
    /// (`EOPNOTSUPP`) give [`Qos::not_available`].
    pub fn dcb_qos(&mut self, ifname: &str) -> Result<Qos> {
        let what = format!("reading the DCB configuration of {ifname}");
        // The kernel's bytes of the model's (escaped) name.
        let raw = crate::model::ifname_to_kernel(ifname).map_err(|e| e.context(what.clone()))?;
        let name = raw.as_slice();
        if name.is_empty() || name.len() >= libc::IFNAMSIZ || name.contains(&0) {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!("{what}: {ifname:?} is not a valid interface name"),
            ));
        }
        // struct dcbmsg { u8 dcb_family; u8 cmd; u16 dcb_pad; } + DCB_ATTR_IFNAME.
        let mut p = vec![libc::AF_UNSPEC as u8, DCB_CMD_IEEE_GET, 0, 0];
        let alen = 4 + name.len() + 1;
        p.extend_from_slice(&(alen as u16).to_ne_bytes());
        p.extend_from_slice(&DCB_ATTR_IFNAME.to_ne_bytes());
        p.extend_from_slice(name);
        p.push(0);
        p.resize((p.len() + 3) & !3, 0);
        let replies = match self.engine.request_raw(RTM_GETDCB, &p, &what) {
            Ok(r) => r,
            Err(e) if e.errno_value() == Some(libc::EOPNOTSUPP) => return Ok(Qos::not_available()),
            Err(e) => return Err(e),
        };
        let (_, payload) = replies
            .iter()
            .find(|(t, _)| *t == RTM_GETDCB)
            .ok_or_else(|| Error::new(ErrorKind::Netlink, format!("{what}: no DCB reply")))?;
        parse_ieee_reply(payload).map_err(|m| Error::new(ErrorKind::Parse, format!("{what}: {m}")))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn attr(kind: u16, body: &[u8]) -> Vec<u8> {
        let mut v = ((4 + body.len()) as u16).to_ne_bytes().to_vec();
        v.extend_from_slice(&kind.to_ne_bytes());
        v.extend_from_slice(body);
        v.resize((v.len() + 3) & !3, 0);
        v
    }

    /// A `DCB_CMD_IEEE_GET` reply as mlx5 sends it (`dcbnl_ieee_fill`).
    pub(crate) fn mlx5_reply(pfc_en: u8, dscp: &[(u8, u8)], other: &[(u8, u16, u8)]) -> Vec<u8> {
        let mut ets = vec![0u8; IEEE_ETS_LEN];
        ets[1] = 8;
        for p in 0..8 {
            ets[ETS_PRIO_TC + p] = p as u8;
        }
        let mut pfc = vec![0u8; IEEE_PFC_LEN];
        pfc[0] = 8;
        pfc[1] = pfc_en;
        pfc[8 + 8 * 3..8 + 8 * 3 + 8].copy_from_slice(&77u64.to_ne_bytes());
        pfc[72 + 8 * 3..72 + 8 * 3 + 8].copy_from_slice(&99u64.to_ne_bytes());
        let mut apps = Vec::new();
        for (d, prio) in dscp {
            let mut a = vec![SEL_DSCP, *prio];
            a.extend_from_slice(&u16::from(*d).to_ne_bytes());
            apps.extend(attr(DCB_ATTR_IEEE_APP, &a));
        }
        for (sel, proto, prio) in other {
            let mut a = vec![*sel, *prio];
            a.extend_from_slice(&proto.to_ne_bytes());
            apps.extend(attr(DCB_ATTR_IEEE_APP, &a));
        }
        let mut ieee = attr(DCB_ATTR_IEEE_ETS, &ets);
        ieee.extend(attr(DCB_ATTR_IEEE_PFC, &pfc));
        ieee.extend(attr(DCB_ATTR_IEEE_APP_TABLE, &apps));
        let mut p = vec![0, DCB_CMD_IEEE_GET, 0, 0];
        p.extend(attr(DCB_ATTR_IFNAME, b"ens1f0np0\0"));
        p.extend(attr(DCB_ATTR_IEEE, &ieee));
        p.extend(attr(DCB_ATTR_DCBX, &[0x5]));
        p
    }

    #[test]
    fn dscp_trust_with_pfc_on_priority_3() {
        let dscp: Vec<(u8, u8)> = (0..64u8).map(|d| (d, d >> 3)).collect();
        let q = parse_ieee_reply(&mlx5_reply(0b0000_1000, &dscp, &[(3, 4791, 3)])).unwrap();
        assert!(q.dcb_available);
        assert_eq!(q.pfc_enabled, Some(vec![3]));
        assert_eq!(q.pfc_cap, Some(8));
        assert_eq!(q.pfc_requests[3], 77);
        assert_eq!(q.pfc_indications[3], 99);
        assert_eq!(q.trust, Some(Trust::Dscp));
        assert_eq!(q.dscp_prio.len(), 64);
        assert_eq!(q.dscp_prio[&26], 3);
        assert_eq!(q.prio_tc, Some((0..8).collect()));
        assert_eq!(
            q.app,
            vec![DcbApp {
                selector: 3,
                protocol: 4791,
                priority: 3
            }]
        );
        assert_eq!(q.dcbx, Some(5));
        assert_eq!(q.priority_for_tc(106, 0), Some(3));
    }

    #[test]
    fn pcp_trust_has_no_dscp_entries_and_garbage_is_refused() {
        let q = parse_ieee_reply(&mlx5_reply(0, &[], &[])).unwrap();
        assert_eq!(q.trust, Some(Trust::Pcp));
        assert_eq!(q.pfc_enabled, Some(vec![]));
        assert!(parse_ieee_reply(&[0, 3, 0, 0]).is_err());
        assert!(parse_ieee_reply(&[0]).is_err());
        // Truncated attributes stop the walk, they do not panic.
        let mut r = mlx5_reply(8, &[(26, 3)], &[]);
        r.truncate(40);
        assert!(parse_ieee_reply(&r).unwrap().dscp_prio.is_empty());
    }
}
