//! Unix times for people: every time roce-net prints (in `status`, in the
//! messages of apply, confirm and the watchdog) reads `2026-12-02 03:04:05 UTC`,
//! with how long ago or ahead it is where that matters.

/// `YYYY-MM-DD HH:MM:SS UTC` for Unix seconds (proleptic Gregorian calendar;
/// Howard Hinnant's `civil_from_days`).
pub fn utc_time(t: u64) -> String {
    let days = i64::try_from(t / 86_400).unwrap_or(i64::MAX / 2);
    let secs = t % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// [`utc_time`] with where it lies from `now`: `2026-12-02 03:04:05 UTC (12 s
/// ago)`, `... (in 20 s)`, `... (now)`.
pub fn relative_time(at: u64, now: u64) -> String {
    let rel = match at.cmp(&now) {
        std::cmp::Ordering::Greater => format!("in {} s", at - now),
        std::cmp::Ordering::Less => format!("{} s ago", now - at),
        std::cmp::Ordering::Equal => "now".to_string(),
    };
    format!("{} ({rel})", utc_time(at))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Past times read "ago", future ones "in", the present "now" (it used to
    /// print `(in 0 s)` for a time that had just passed), all with the UTC date.
    #[test]
    fn times_say_past_and_future_with_the_utc_date() {
        assert_eq!(utc_time(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc_time(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc_time(1_796_179_690), "2026-12-02 02:48:10 UTC");
        // Never panics, whatever a journal holds.
        assert!(utc_time(u64::MAX).ends_with(" UTC"));
        assert_eq!(
            relative_time(1_796_179_690, 1_796_179_700),
            "2026-12-02 02:48:10 UTC (10 s ago)"
        );
        assert_eq!(
            relative_time(1_796_179_690, 1_796_179_680),
            "2026-12-02 02:48:10 UTC (in 10 s)"
        );
        assert_eq!(
            relative_time(1_796_179_690, 1_796_179_690),
            "2026-12-02 02:48:10 UTC (now)"
        );
    }
}
