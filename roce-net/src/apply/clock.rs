//! The clocks of the confirm deadline, and the liveness of a recorded process.
//!
//! A confirm deadline is timed on `CLOCK_BOOTTIME`, which an NTP step, a
//! manual `date -s` or a leap smear never moves (and which keeps counting
//! through a suspend, like the wall clock people read). Wall time is kept
//! beside it only to show people when. Boot-clock readings are valid within
//! one boot, and so are the journals that hold them (a journal's identity
//! holds the boot id).

use crate::error::{Error, ErrorKind, Result};
use std::time::Duration;

/// The longest confirm timeout accepted (one day).
pub const MAX_CONFIRM_TIMEOUT: Duration = Duration::from_secs(86_400);

#[cfg(test)]
thread_local! {
    /// Test seam: how far this thread's wall clock is stepped (seconds).
    pub(crate) static WALL_STEP: std::cell::Cell<i64> = const { std::cell::Cell::new(0) };
}

/// The wall clock since the Unix epoch (for display and the journal's times).
pub(crate) fn wall() -> Duration {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    #[cfg(test)]
    let t = {
        let step = WALL_STEP.with(|s| s.get());
        if step >= 0 {
            t + Duration::from_secs(step.unsigned_abs())
        } else {
            t.saturating_sub(Duration::from_secs(step.unsigned_abs()))
        }
    };
    t
}

/// The wall clock in Unix seconds (for people; deadlines are timed on the
/// boot clock, below).
pub(crate) fn now() -> u64 {
    wall().as_secs()
}

/// The first whole Unix second at least `t` from now, for a confirm timeout
/// between 1 s and [`MAX_CONFIRM_TIMEOUT`], and the boot-clock millisecond
/// `t` from now. Rounded up from the exact time: a deadline of "this second
/// plus one" could be a millisecond away, and pass before the apply it guards
/// had started.
pub(crate) fn deadline_after(t: Duration) -> Result<(u64, Option<u64>)> {
    if t < Duration::from_secs(1) || t > MAX_CONFIRM_TIMEOUT {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!(
                "confirm timeout {} s is not between 1 and {} seconds",
                t.as_secs_f64(),
                MAX_CONFIRM_TIMEOUT.as_secs()
            ),
        ));
    }
    let boot = boot_ms().map(|b| b.saturating_add(t.as_millis() as u64));
    let end = wall().saturating_add(t);
    Ok((end.as_secs() + u64::from(end.subsec_nanos() > 0), boot))
}

/// Milliseconds on `CLOCK_BOOTTIME` (`None` where the kernel has no such clock).
pub(crate) fn boot_ms() -> Option<u64> {
    // SAFETY: clock_gettime into a zeroed timespec.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    if unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) } != 0 {
        return None;
    }
    let s = u64::try_from(ts.tv_sec).ok()?;
    let ns = u64::try_from(ts.tv_nsec).ok()?;
    Some(s.saturating_mul(1000) + ns / 1_000_000)
}

/// How long until a deadline recorded as `wall` (Unix seconds) and, when
/// recorded, `boot` (boot-clock milliseconds); zero once it passed. The boot
/// clock decides when there is one.
pub(crate) fn left(wall_deadline: u64, boot: Option<u64>) -> Duration {
    match (boot, boot_ms()) {
        (Some(b), Some(now)) => Duration::from_millis(b.saturating_sub(now)),
        _ => Duration::from_secs(wall_deadline).saturating_sub(wall()),
    }
}

/// The start time of process `pid` (clock ticks after boot, field 22 of
/// `/proc/PID/stat`), or `None` when there is no such live process (a
/// zombie is dead).
pub(crate) fn process_start(pid: u32) -> Option<u64> {
    let s = crate::input::read_attribute_text(std::path::Path::new(&format!("/proc/{pid}/stat")))
        .ok()?;
    // The command name is in parentheses and may hold anything: fields
    // are counted from its closing parenthesis (field 3, the state, next).
    let rest = &s[s.rfind(')')? + 1..];
    let mut f = rest.split_whitespace();
    if matches!(f.next(), Some("Z") | Some("X") | Some("x")) {
        return None;
    }
    f.nth(18)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deadline_is_never_nearer_than_its_timeout() {
        for t in [Duration::from_secs(1), Duration::from_millis(1500)] {
            for _ in 0..50 {
                let before = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap();
                let (d, b) = deadline_after(t).unwrap();
                assert!(b.is_some());
                assert!(
                    Duration::from_secs(d) >= before + t,
                    "deadline {d} for {t:?} from {before:?}"
                );
                assert!(Duration::from_secs(d) < before + t + Duration::from_secs(2));
                std::thread::sleep(Duration::from_millis(7));
            }
        }
        assert!(deadline_after(Duration::from_millis(999)).is_err());
        assert!(deadline_after(MAX_CONFIRM_TIMEOUT + Duration::from_secs(1)).is_err());
    }

    #[test]
    fn this_process_is_alive_and_a_step_moves_only_the_wall_clock() {
        let me = process_start(std::process::id()).unwrap();
        assert_eq!(process_start(std::process::id()), Some(me));
        assert_eq!(process_start(u32::MAX), None);
        let b = boot_ms().unwrap();
        let w = wall().as_secs() + 10;
        let l = left(w, Some(b + 10_000));
        WALL_STEP.with(|s| s.set(3600));
        assert!(left(w, None).is_zero(), "the wall clock moved on");
        assert!(left(w, Some(b + 10_000)) <= l && left(w, Some(b + 10_000)) > l / 2);
        WALL_STEP.with(|s| s.set(0));
    }
}
