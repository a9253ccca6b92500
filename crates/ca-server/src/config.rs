//! `DIR/acme.toml`, the ACME server's configuration in the CA directory: certificate
//! profiles (`[acme_profile.NAME]`: a lifetime, offered in the directory), which profile
//! an order without one gets, whether external account binding is required, and the
//! per-account limits. A missing file means the defaults below.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::error::ServerError;

/// Largest `acme.toml` read.
const MAX_CONFIG_BYTES: u64 = 256 * 1024;

/// One certificate profile of the ACME server (not `ca issue --profile`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AcmeProfile {
    /// Certificate lifetime in days (1 to 3650).
    pub days: u32,
    /// What the directory's `meta.profiles` says about it.
    #[serde(default)]
    pub description: Option<String>,
}

/// Per-account limits.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RateLimits {
    /// New orders one account may create per hour.
    pub new_orders_per_hour: u32,
    /// New accounts one client address may create per hour.
    pub new_accounts_per_hour: u32,
}

impl Default for RateLimits {
    fn default() -> Self {
        RateLimits {
            new_orders_per_hour: 300,
            new_accounts_per_hour: 50,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    default_profile: Option<String>,
    #[serde(default)]
    eab_required: bool,
    #[serde(default)]
    acme_profile: BTreeMap<String, AcmeProfile>,
    #[serde(default)]
    rate_limits: RateLimits,
}

/// The ACME server's configuration, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcmeConfig {
    /// Profiles by name.
    pub profiles: BTreeMap<String, AcmeProfile>,
    /// The profile of an order that names none (one of `profiles`).
    pub default_profile: String,
    /// newAccount without externalAccountBinding is refused.
    pub eab_required: bool,
    /// Per-account limits.
    pub rate_limits: RateLimits,
}

impl Default for AcmeConfig {
    fn default() -> Self {
        let mut profiles = BTreeMap::new();
        profiles.insert(
            "default".to_string(),
            AcmeProfile {
                days: 90,
                description: Some("90 days".into()),
            },
        );
        profiles.insert(
            "shortlived".to_string(),
            AcmeProfile {
                days: 6,
                description: Some("6 days".into()),
            },
        );
        AcmeConfig {
            profiles,
            default_profile: "default".into(),
            eab_required: false,
            rate_limits: RateLimits::default(),
        }
    }
}

impl AcmeConfig {
    /// Read `path` (the defaults when it does not exist).
    pub fn load(path: &Path) -> Result<Self, ServerError> {
        if !path.exists() {
            return Ok(AcmeConfig::default());
        }
        let text = tlskit_io::read_to_string(path, MAX_CONFIG_BYTES)
            .map_err(|e| ServerError::file(path, e))?;
        Self::parse(&text).map_err(|reason| ServerError::Config {
            path: path.to_path_buf(),
            reason,
        })
    }

    fn parse(text: &str) -> Result<Self, String> {
        let f: File = toml::from_str(text).map_err(|e| e.message().to_string())?;
        let mut cfg = AcmeConfig {
            eab_required: f.eab_required,
            rate_limits: f.rate_limits,
            ..AcmeConfig::default()
        };
        if !f.acme_profile.is_empty() {
            cfg.profiles = f.acme_profile;
        }
        for (name, p) in &cfg.profiles {
            if !(1..=3650).contains(&p.days) {
                return Err(format!(
                    "acme_profile.{name}: days must be 1 to 3650, not {}",
                    p.days
                ));
            }
            if name.is_empty()
                || name.len() > 64
                || !name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            {
                return Err(format!(
                    "profile name {name:?} must be 1 to 64 letters, digits, - or _"
                ));
            }
        }
        cfg.default_profile = match f.default_profile {
            Some(d) => d,
            None if cfg.profiles.contains_key("default") => "default".into(),
            None => cfg.profiles.keys().next().cloned().unwrap_or_default(),
        };
        if !cfg.profiles.contains_key(&cfg.default_profile) {
            return Err(format!(
                "default_profile {:?} is not one of the [acme_profile.NAME] tables",
                cfg.default_profile
            ));
        }
        Ok(cfg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_offer_default_and_shortlived() {
        let c = AcmeConfig::parse("").expect("empty file");
        assert_eq!(c.default_profile, "default");
        assert_eq!(c.profiles["default"].days, 90);
        assert_eq!(c.profiles["shortlived"].days, 6);
        assert!(!c.eab_required);
    }

    #[test]
    fn profiles_and_default_are_read_and_checked() {
        let c = AcmeConfig::parse(
            "default_profile = \"short\"\neab_required = true\n[acme_profile.short]\ndays = 6\n[acme_profile.long]\ndays = 45\n[rate_limits]\nnew_orders_per_hour = 5\n",
        )
        .expect("valid");
        assert_eq!(c.default_profile, "short");
        assert_eq!(c.profiles.len(), 2);
        assert!(c.eab_required);
        assert_eq!(c.rate_limits.new_orders_per_hour, 5);
        let e = AcmeConfig::parse("default_profile = \"x\"\n[acme_profile.a]\ndays = 1\n")
            .expect_err("unknown default");
        assert!(e.contains("default_profile \"x\""), "{e}");
        let e = AcmeConfig::parse("[acme_profile.a]\ndays = 0\n").expect_err("zero days");
        assert!(e.contains("days must be"), "{e}");
        assert!(AcmeConfig::parse("eab = true\n").is_err());
    }
}
