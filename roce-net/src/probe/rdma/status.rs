//! Names of work-completion statuses and errnos, for reports.

/// `ibv_wc_status_str()` of rdma-core (`libibverbs/enum_strs.c`), so reports
/// read the same without the library; the `matches_the_real_library` test
/// compares every entry with the installed libibverbs.
const WC_STATUS: [&str; 24] = [
    "success",
    "local length error",
    "local QP operation error",
    "local EE context operation error",
    "local protection error",
    "Work Request Flushed Error",
    "memory management operation error",
    "bad response error",
    "local access error",
    "remote invalid request error",
    "remote access error",
    "remote operation error",
    "transport retry counter exceeded",
    "RNR retry counter exceeded",
    "local RDD violation error",
    "remote invalid RD request",
    "aborted error",
    "invalid EE context number",
    "invalid EE context state",
    "fatal error",
    "response timeout error",
    "general error",
    "TM error",
    "TM software rendezvous",
];

/// `IBV_WC_RETRY_EXC_ERR`: no ACK after `retry_cnt` retransmissions.
pub const WC_RETRY_EXC_ERR: u32 = 12;
/// `IBV_WC_RNR_RETRY_EXC_ERR`: the peer had no receive posted.
pub const WC_RNR_RETRY_EXC_ERR: u32 = 13;
/// `IBV_WC_REM_ACCESS_ERR`: wrong rkey or address at the peer.
pub const WC_REM_ACCESS_ERR: u32 = 10;

/// The text `ibv_wc_status_str` gives for a status.
pub fn wc_status_name(status: u32) -> String {
    WC_STATUS
        .get(status as usize)
        .map(|s| s.to_string())
        .unwrap_or_else(|| "unknown".to_string())
}

/// The symbolic name of an errno (`ETIMEDOUT`), or `errno N`.
pub fn errno_name(e: i32) -> String {
    let n = match e {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::EIO => "EIO",
        libc::ENXIO => "ENXIO",
        libc::EAGAIN => "EAGAIN",
        libc::ENOMEM => "ENOMEM",
        libc::EACCES => "EACCES",
        libc::EFAULT => "EFAULT",
        libc::EBUSY => "EBUSY",
        libc::ENODEV => "ENODEV",
        libc::EINVAL => "EINVAL",
        libc::ENOSPC => "ENOSPC",
        libc::ENOSYS => "ENOSYS",
        libc::ENODATA => "ENODATA",
        libc::EPROTO => "EPROTO",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::EADDRNOTAVAIL => "EADDRNOTAVAIL",
        libc::ENETDOWN => "ENETDOWN",
        libc::ENETUNREACH => "ENETUNREACH",
        libc::ECONNRESET => "ECONNRESET",
        libc::ETIMEDOUT => "ETIMEDOUT",
        libc::ECONNREFUSED => "ECONNREFUSED",
        libc::EHOSTDOWN => "EHOSTDOWN",
        libc::EHOSTUNREACH => "EHOSTUNREACH",
        _ => return format!("errno {e}"),
    };
    n.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_real_library() {
        let lib =
            crate::kernel::verbs::lib::Lib::load(None).unwrap_or_else(|e| panic!("{}", e.detail));
        for s in 0..WC_STATUS.len() as u32 {
            assert_eq!(wc_status_name(s), lib.status_str(s), "status {s}");
        }
        assert_eq!(wc_status_name(99), "unknown");
        assert_eq!(lib.status_str(99), "unknown");
    }

    #[test]
    fn errno_names() {
        assert_eq!(errno_name(libc::ETIMEDOUT), "ETIMEDOUT");
        assert_eq!(errno_name(libc::ENETUNREACH), "ENETUNREACH");
        assert_eq!(errno_name(4242), "errno 4242");
    }
}
