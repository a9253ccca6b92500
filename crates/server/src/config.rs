//! The accepted ranges of `serve`'s numeric settings ([`Range`], [`ranges`]): the
//! settings model (`crate::settings`) checks every duration and size against them, and
//! the server checks a configuration built by hand again at bind.

use std::time::Duration;

use tlskit_tls::NetError;

/// The accepted range of one numeric setting of `serve` (issue 27): every duration and
/// size from the command line or the config file is checked against its range before any
/// arithmetic, and refused at start (exit 2) with the flag or key and the range named.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct Range {
    /// The config key (`handshake_timeout`); the flag is the same with dashes.
    pub key: &'static str,
    /// Smallest value accepted.
    pub min: f64,
    /// Largest value accepted.
    pub max: f64,
    /// `seconds`, `bytes`, `connections`, `days`.
    pub unit: &'static str,
}

/// The ranges of `serve`'s numeric settings (the same for the flag and the config key).
pub mod ranges {
    use super::Range;

    const fn r(key: &'static str, min: f64, max: f64, unit: &'static str) -> Range {
        Range {
            key,
            min,
            max,
            unit,
        }
    }
    /// One day: the longest handshake or request-head deadline.
    const DAY: f64 = 86_400.0;
    /// Accept to handshake done, also the backend connect.
    pub const HANDSHAKE_TIMEOUT: Range = r("handshake_timeout", 0.001, DAY, "seconds");
    /// One request head (and small body).
    pub const HEADER_TIMEOUT: Range = r("header_timeout", 0.001, DAY, "seconds");
    /// Silence on an established connection: up to a week.
    pub const IDLE_TIMEOUT: Range = r("idle_timeout", 0.001, 7.0 * DAY, "seconds");
    /// SIGTERM's wait for open connections.
    pub const SHUTDOWN_GRACE: Range = r("shutdown_grace", 0.0, DAY, "seconds");
    /// Open connections: at most the kernel's default ceiling of open files
    /// (`fs.nr_open`), which every connection needs one of.
    pub const MAX_CONNECTIONS: Range = r("max_connections", 1.0, 1_048_576.0, "connections");
    /// One connection's ClientHello buffer (a 64 KiB message in 16 KiB records).
    pub const MAX_CLIENT_HELLO: Range = r("max_client_hello", 1024.0, 65_556.0, "bytes");
    /// All partial ClientHellos: one allocation, made at the first connection; at most
    /// 1 GiB (65,536 connections at the default 16 KiB).
    pub const HANDSHAKE_BUDGET: Range = r("handshake_budget", 1024.0, 1_073_741_824.0, "bytes");
    /// Ticket key period (rustls's ticketer replaces its own key every 6 hours).
    pub const TICKET_ROTATION: Range = r("ticket_rotation", 1.0, 21_600.0, "seconds");
    /// Periodic re-read of the fleet's ticket keys.
    pub const SHARED_STATE_REREAD: Range = r("shared_state_reread", 0.1, 3600.0, "seconds");
    /// Most time between two ACME renewal checks.
    pub const ACME_RECHECK: Range = r("acme_recheck", 0.1, 7.0 * DAY, "seconds");
    /// First retry after an ACME failure (doubles up to an hour).
    pub const ACME_RETRY: Range = r("acme_retry", 0.01, 3600.0, "seconds");
    /// Expiry warning horizon: ten years.
    pub const EXPIRY_WARNING_DAYS: Range = r("expiry_warning_days", 0.0, 3650.0, "days");
}

impl Range {
    /// The flag of this setting (`--handshake-timeout`).
    pub fn flag(&self) -> String {
        format!("--{}", self.key.replace('_', "-"))
    }

    /// `value` checked against the range; `name` says where it came from (the flag, or the
    /// key and its file).
    pub fn check(&self, value: f64, name: &str) -> Result<f64, NetError> {
        if value.is_finite() && value >= self.min && value <= self.max {
            Ok(value)
        } else {
            Err(self.refusal(&value.to_string(), name))
        }
    }

    /// A duration in seconds, checked.
    pub fn secs(&self, value: f64, name: &str) -> Result<Duration, NetError> {
        Ok(Duration::from_secs_f64(self.check(value, name)?))
    }

    /// A count or size, checked (as it arrives: an unsigned integer).
    pub fn count(&self, value: u64, name: &str) -> Result<usize, NetError> {
        // Every maximum is far below 2^53: the conversion to f64 is exact in range, and a
        // larger value stays larger.
        #[allow(clippy::cast_precision_loss)]
        let v = value as f64;
        if !(v >= self.min && v <= self.max) {
            return Err(self.refusal(&value.to_string(), name));
        }
        usize::try_from(value).map_err(|_| self.refusal(&v.to_string(), name))
    }

    fn refusal(&self, value: &str, name: &str) -> NetError {
        NetError::Config(format!(
            "{name} {value} is out of range: {} must be {} to {} {}",
            self.key, self.min, self.max, self.unit
        ))
    }

    /// A duration already made (library callers), checked under the key's name.
    pub(crate) fn duration(&self, d: Duration) -> Result<(), NetError> {
        self.check(d.as_secs_f64(), self.key).map(drop)
    }
}

#[cfg(test)]
mod range_tests {
    use super::ranges;

    #[test]
    fn values_outside_a_range_are_refused_before_arithmetic() {
        let r = ranges::SHUTDOWN_GRACE;
        for bad in [1e19, -1.0, f64::NAN, f64::INFINITY, 86_400.001] {
            let e = r.secs(bad, "--shutdown-grace").err().map(|e| e.to_string());
            assert!(
                e.as_deref()
                    .is_some_and(|e| e.contains("shutdown_grace must be 0 to 86400 seconds")),
                "{bad}: {e:?}"
            );
        }
        assert_eq!(r.secs(0.0, "x").ok(), Some(std::time::Duration::ZERO));
        let c = ranges::MAX_CONNECTIONS;
        assert!(c.count(u64::MAX, "--max-connections").is_err());
        assert!(c.count(0, "--max-connections").is_err());
        assert_eq!(c.count(1_048_576, "x").ok(), Some(1_048_576));
        assert_eq!(c.flag(), "--max-connections");
    }
}
