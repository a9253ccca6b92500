//! The one place tlskit turns dates into numbers and numbers into text: days since
//! 1970 for a civil date and back (Howard Hinnant's algorithms, exact for every `i64`
//! day a certificate can name, before 1970 included) and RFC 3339 UTC timestamps, which
//! every command prints and every JSON field carries.

/// Days since 1970-01-01 of a proleptic Gregorian date.
#[inline]
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// [`days_from_civil`] for the dates certificates hold (years 0 to 9999, months 1 to
/// 12, days 1 to 31), in unsigned arithmetic: the year is moved on by one 400-year era
/// so that it never goes below zero, which lets every division be a plain multiply and
/// shift (it runs twice per certificate of every store load).
#[inline]
pub(crate) fn days_from_civil_cert(y: u32, m: u32, d: u32) -> i64 {
    debug_assert!(y <= 9999 && (1..=12).contains(&m) && (1..=31).contains(&d));
    let y = y + 400 - u32::from(m <= 2);
    let era = y / 400;
    let yoe = y - era * 400;
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    i64::from(era) * 146_097 + i64::from(doe) - 719_468 - 146_097
}

/// The proleptic Gregorian (year, month, day) of a day number since 1970-01-01.
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Unix seconds as RFC 3339 UTC: `2026-11-23T21:41:37Z`.
pub fn rfc3339(t: i64) -> String {
    let (y, m, d) = civil_from_days(t.div_euclid(86_400));
    let secs = t.rem_euclid(86_400);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates_round_trip() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(
            days_from_civil(9999, 12, 31) * 86_400 + 86_399,
            253_402_300_799
        );
        for days in [-719_468, -25_567, -1, 0, 1, 11_017, 2_932_896] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
    }

    #[test]
    fn the_certificate_date_path_agrees_for_every_date_a_certificate_can_hold() {
        let mut n = 0u32;
        for y in 0..=9999u32 {
            for m in 1..=12u32 {
                for d in [1u32, 2, 15, 27, 28, 29, 30, 31] {
                    assert_eq!(
                        days_from_civil_cert(y, m, d),
                        days_from_civil(i64::from(y), i64::from(m), i64::from(d)),
                        "{y}-{m}-{d}"
                    );
                    n += 1;
                }
            }
        }
        assert_eq!(n, 10_000 * 12 * 8);
    }

    #[test]
    fn rfc3339_text() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(2_147_483_648), "2038-01-19T03:14:08Z");
        assert_eq!(rfc3339(-1), "1969-12-31T23:59:59Z");
        assert_eq!(rfc3339(253_402_300_799), "9999-12-31T23:59:59Z");
    }
}
