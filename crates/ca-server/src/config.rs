//! `DIR/acme.toml`, the ACME server's configuration in the CA directory: certificate
//! profiles (`[acme_profile.NAME]`: a lifetime, extended key usages and whether the CRL
//! distribution point goes in, offered in the directory), which profile an order without
//! one gets, whether external account binding is required, the per-account limits and
//! how long finished objects are kept. A missing file means the defaults below; an
//! unknown key or value, or a number out of range, stops the server at start.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
pub use tlskit_pki::ca::ExtendedKeyUsage;

use crate::error::ServerError;

/// Largest `acme.toml` read.
const MAX_CONFIG_BYTES: u64 = 256 * 1024;

/// One certificate profile of the ACME server (not `ca issue --profile`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AcmeProfile {
    /// Certificate lifetime in days (1 to 3650).
    pub days: u32,
    /// What the directory's `meta.profiles` says about it (without one: the lifetime
    /// and the usages, e.g. "90 days, serverAuth").
    #[serde(default)]
    pub description: Option<String>,
    /// The certificates' extended key usages: `serverAuth`, `clientAuth` or both
    /// (default `["serverAuth"]`).
    #[serde(default = "server_auth")]
    pub extended_key_usage: Vec<ExtendedKeyUsage>,
    /// Whether the CA's CRL distribution point (`DIR/crl-url`) goes into the
    /// certificates (default true).
    #[serde(default = "yes")]
    pub crl_distribution_point: bool,
}

fn server_auth() -> Vec<ExtendedKeyUsage> {
    vec![ExtendedKeyUsage::ServerAuth]
}

fn yes() -> bool {
    true
}

impl AcmeProfile {
    /// A profile of `days` for TLS servers, with the CA's CRL distribution point.
    pub fn server(days: u32) -> Self {
        AcmeProfile {
            days,
            description: None,
            extended_key_usage: server_auth(),
            crl_distribution_point: true,
        }
    }

    /// What the directory's `meta.profiles` says about it.
    pub fn describe(&self) -> String {
        if let Some(d) = &self.description {
            return d.clone();
        }
        let usages: Vec<&str> = self.extended_key_usage.iter().map(|u| u.name()).collect();
        format!("{} days, {}", self.days, usages.join(" and "))
    }

    /// Whether certificates of this profile authenticate TLS servers (otherwise they are
    /// issued through `ca issue`'s client profile).
    pub fn server_auth(&self) -> bool {
        self.extended_key_usage
            .contains(&ExtendedKeyUsage::ServerAuth)
    }
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

/// How long finished state objects stay under `DIR/acme/` (accounts always stay; a
/// certificate's record stays until the certificate expires, for revocation and ARI).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Retention {
    /// Days a valid order (and its authorizations) is kept after the order's `expires`
    /// (0 to 3650, default 7).
    pub valid_days: u32,
    /// Seconds between two sweeps while the server runs (60 to 86400, default 3600).
    pub sweep_interval_secs: u64,
}

impl Default for Retention {
    fn default() -> Self {
        Retention {
            valid_days: 7,
            sweep_interval_secs: 3600,
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
    #[serde(default)]
    retention: Retention,
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
    /// How long finished orders and authorizations are kept.
    pub retention: Retention,
}

impl Default for AcmeConfig {
    fn default() -> Self {
        let mut profiles = BTreeMap::new();
        profiles.insert("default".to_string(), AcmeProfile::server(90));
        profiles.insert("shortlived".to_string(), AcmeProfile::server(6));
        AcmeConfig {
            profiles,
            default_profile: "default".into(),
            eab_required: false,
            rate_limits: RateLimits::default(),
            retention: Retention::default(),
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
        let f: File = toml::from_str(text).map_err(|e| toml_error(text, &e))?;
        let mut cfg = AcmeConfig {
            eab_required: f.eab_required,
            rate_limits: f.rate_limits,
            retention: f.retention,
            ..AcmeConfig::default()
        };
        for (key, v) in [
            (
                "rate_limits.new_orders_per_hour",
                cfg.rate_limits.new_orders_per_hour,
            ),
            (
                "rate_limits.new_accounts_per_hour",
                cfg.rate_limits.new_accounts_per_hour,
            ),
        ] {
            if !(1..=1_000_000).contains(&v) {
                return Err(format!("{key} must be 1 to 1000000, not {v}"));
            }
        }
        if cfg.retention.valid_days > 3650 {
            return Err(format!(
                "retention.valid_days must be 0 to 3650, not {}",
                cfg.retention.valid_days
            ));
        }
        if !(60..=86_400).contains(&cfg.retention.sweep_interval_secs) {
            return Err(format!(
                "retention.sweep_interval_secs must be 60 to 86400, not {}",
                cfg.retention.sweep_interval_secs
            ));
        }
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
                    "profile name {:?} must be 1 to 64 letters, digits, - or _",
                    show(name)
                ));
            }
            if p.extended_key_usage.is_empty() {
                return Err(format!(
                    "acme_profile.{name}.extended_key_usage must name serverAuth, clientAuth or both"
                ));
            }
            let mut seen = p.extended_key_usage.clone();
            seen.sort();
            seen.dedup();
            if seen.len() != p.extended_key_usage.len() {
                return Err(format!(
                    "acme_profile.{name}.extended_key_usage names a usage twice"
                ));
            }
            if let Some(d) = &p.description {
                if d.is_empty() || d.len() > 200 || d.chars().any(char::is_control) {
                    return Err(format!(
                        "acme_profile.{name}.description must be 1 to 200 characters without control characters"
                    ));
                }
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
                show(&cfg.default_profile)
            ));
        }
        Ok(cfg)
    }
}

/// Text from the file, cut to 200 characters, control characters escaped.
fn show(s: &str) -> String {
    let cut: String = s.chars().take(200).collect();
    tlskit_x509::text::escape(&cut).into_owned()
}

/// A TOML error as a sentence with its line and the key on it (the file's text is
/// escaped: it is shown to whoever started the server).
fn toml_error(text: &str, e: &toml::de::Error) -> String {
    let msg = tlskit_x509::text::escape(e.message().trim_end()).into_owned();
    let Some(span) = e.span() else {
        return msg;
    };
    let start = span.start.min(text.len());
    let line_no = text.as_bytes()[..start]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1;
    let line = text.lines().nth(line_no - 1).unwrap_or("");
    let key = line.split('=').next().unwrap_or("").trim();
    if line.contains('=') && !key.is_empty() && key.len() <= 64 {
        format!("line {line_no}, key {}: {msg}", show(key))
    } else {
        format!("line {line_no}: {msg}")
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

    #[test]
    fn profiles_carry_usages_and_the_distribution_point() {
        let c = AcmeConfig::parse(
            "[acme_profile.mtls]\ndays = 30\nextended_key_usage = [\"serverAuth\", \"clientAuth\"]\n\
             [acme_profile.client]\ndays = 7\nextended_key_usage = [\"clientAuth\"]\ncrl_distribution_point = false\n\
             description = \"Client certificates for mTLS\"\n",
        )
        .expect("valid");
        let m = &c.profiles["mtls"];
        assert_eq!(
            m.extended_key_usage,
            [ExtendedKeyUsage::ServerAuth, ExtendedKeyUsage::ClientAuth]
        );
        assert!(m.crl_distribution_point && m.server_auth());
        assert_eq!(m.describe(), "30 days, serverAuth and clientAuth");
        let cl = &c.profiles["client"];
        assert!(!cl.server_auth() && !cl.crl_distribution_point);
        assert_eq!(cl.describe(), "Client certificates for mTLS");
        // No usage named: serverAuth, as `ca issue --profile server`.
        let d = AcmeConfig::parse("").expect("defaults");
        assert_eq!(d.profiles["default"].describe(), "90 days, serverAuth");
        assert_eq!(d.retention, Retention::default());
    }

    #[test]
    fn unknown_keys_values_and_out_of_range_numbers_are_refused() {
        for (text, want) in [
            (
                "[acme_profile.a]\ndays = 5\nextended_key_usage = [\"codeSigning\"]\n",
                "line 3, key extended_key_usage: unknown variant `codeSigning`",
            ),
            ("[acme_profile.a]\ndays = 5\neku = []\n", "unknown field `eku`"),
            ("[acme_profile.a]\ndays = 5\nextended_key_usage = []\n", "must name serverAuth"),
            (
                "[acme_profile.a]\ndays = 5\nextended_key_usage = [\"clientAuth\", \"clientAuth\"]\n",
                "names a usage twice",
            ),
            ("[acme_profile.a]\ndays = 3651\n", "days must be 1 to 3650"),
            ("[acme_profile.a]\ndays = -1\n", "line 2, key days"),
            ("[acme_profile.a]\ndays = 5\ncrl_distribution_point = \"no\"\n", "key crl_distribution_point"),
            ("[acme_profile.a]\ndays = 5\ndescription = \"\"\n", "description must be"),
            ("[rate_limits]\nnew_orders_per_hour = 0\n", "rate_limits.new_orders_per_hour must be 1"),
            ("[retention]\nvalid_days = 4000\n", "retention.valid_days must be 0 to 3650"),
            ("[retention]\nsweep_interval_secs = 1\n", "retention.sweep_interval_secs must be 60"),
            ("[retention]\nkeep = 1\n", "unknown field `keep`"),
            ("[acme_profile.\"a b\"]\ndays = 5\n", "profile name \"a b\""),
        ] {
            let e = AcmeConfig::parse(text).expect_err(text);
            assert!(e.contains(want), "{text:?}: {e}");
        }
        // Through load: the message names the file.
        let t = tempfile::tempdir().expect("tempdir");
        let path = t.path().join("acme.toml");
        std::fs::write(
            &path,
            "[acme_profile.a]\ndays = 5\nextended_key_usage = [\"x\"]\n",
        )
        .expect("write");
        let e = AcmeConfig::load(&path).expect_err("bad value").to_string();
        assert!(e.starts_with(&format!("{}: line 3", path.display())), "{e}");
    }
}
