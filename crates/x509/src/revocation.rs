//! Why a certificate was revoked: the RFC 5280 CRLReason (section 5.3.1), the one type
//! `tlskit acme revoke --reason`, `tlskit ca revoke --reason`, the file CA's index and
//! its CRLs share.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// An RFC 5280 CRLReason. `certificateHold` (6) and `removeFromCRL` (8) are absent: a
/// hold is not a revocation, and tlskit writes no delta CRLs. Serialized as the RFC's
/// name (`keyCompromise`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize,
)]
#[non_exhaustive]
pub enum RevocationReason {
    /// 0: no reason given (a CRL entry then carries no reasonCode, as RFC 5280 asks).
    #[default]
    #[serde(rename = "unspecified")]
    Unspecified,
    /// 1: the certificate's private key was compromised.
    #[serde(rename = "keyCompromise")]
    KeyCompromise,
    /// 2: the private key of a CA certificate was compromised.
    #[serde(rename = "cACompromise")]
    CaCompromise,
    /// 3: the subject's name or other information changed.
    #[serde(rename = "affiliationChanged")]
    AffiliationChanged,
    /// 4: the certificate was replaced.
    #[serde(rename = "superseded")]
    Superseded,
    /// 5: the certificate is no longer needed.
    #[serde(rename = "cessationOfOperation")]
    CessationOfOperation,
    /// 9: a privilege granted by the certificate was withdrawn.
    #[serde(rename = "privilegeWithdrawn")]
    PrivilegeWithdrawn,
    /// 10: an attribute authority was compromised.
    #[serde(rename = "aACompromise")]
    AaCompromise,
}

impl RevocationReason {
    /// The reasons a subscriber or an operator may give on the command line (and an ACME
    /// CA such as Let's Encrypt accepts): what [`FromStr`] parses.
    pub const CHOOSABLE: [RevocationReason; 5] = [
        RevocationReason::Unspecified,
        RevocationReason::KeyCompromise,
        RevocationReason::AffiliationChanged,
        RevocationReason::Superseded,
        RevocationReason::CessationOfOperation,
    ];

    /// The codes of [`Self::CHOOSABLE`], as `--reason` completes them (the names parse
    /// too).
    pub const CHOOSABLE_CODES: [&'static str; 5] = ["0", "1", "3", "4", "5"];

    /// The reason code (RFC 5280 CRLReason value).
    pub fn code(self) -> u8 {
        match self {
            RevocationReason::Unspecified => 0,
            RevocationReason::KeyCompromise => 1,
            RevocationReason::CaCompromise => 2,
            RevocationReason::AffiliationChanged => 3,
            RevocationReason::Superseded => 4,
            RevocationReason::CessationOfOperation => 5,
            RevocationReason::PrivilegeWithdrawn => 9,
            RevocationReason::AaCompromise => 10,
        }
    }

    /// The reason of a code (`None` for 6, 7, 8 and above 10).
    pub fn from_code(code: u8) -> Option<Self> {
        Some(match code {
            0 => RevocationReason::Unspecified,
            1 => RevocationReason::KeyCompromise,
            2 => RevocationReason::CaCompromise,
            3 => RevocationReason::AffiliationChanged,
            4 => RevocationReason::Superseded,
            5 => RevocationReason::CessationOfOperation,
            9 => RevocationReason::PrivilegeWithdrawn,
            10 => RevocationReason::AaCompromise,
            _ => return None,
        })
    }

    /// The RFC 5280 name (`keyCompromise`), as JSON and the index carry it.
    pub fn name(self) -> &'static str {
        match self {
            RevocationReason::Unspecified => "unspecified",
            RevocationReason::KeyCompromise => "keyCompromise",
            RevocationReason::CaCompromise => "cACompromise",
            RevocationReason::AffiliationChanged => "affiliationChanged",
            RevocationReason::Superseded => "superseded",
            RevocationReason::CessationOfOperation => "cessationOfOperation",
            RevocationReason::PrivilegeWithdrawn => "privilegeWithdrawn",
            RevocationReason::AaCompromise => "aACompromise",
        }
    }
}

/// The RFC 5280 name of any CRLReason code, `certificateHold` and `removeFromCRL`
/// included (`"unknown"` for 7 and above 10), as a CRL read from elsewhere may carry it.
pub fn reason_name(code: u8) -> &'static str {
    match code {
        6 => "certificateHold",
        8 => "removeFromCRL",
        c => RevocationReason::from_code(c).map_or("unknown", RevocationReason::name),
    }
}

impl fmt::Display for RevocationReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A `--reason` value that is not one of [`RevocationReason::CHOOSABLE`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownReason {
    /// The value as given.
    pub input: String,
}

impl fmt::Display for UnknownReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "revocation reason \"{}\": use 0 (unspecified), 1 (keyCompromise), 3 \
             (affiliationChanged), 4 (superseded) or 5 (cessationOfOperation)",
            crate::text::escape(&self.input)
        )
    }
}

impl std::error::Error for UnknownReason {}

impl FromStr for RevocationReason {
    type Err = UnknownReason;
    /// A code (`1`) or a name (`keyCompromise`, any case) of [`Self::CHOOSABLE`].
    fn from_str(s: &str) -> Result<Self, UnknownReason> {
        let t = s.trim();
        Self::CHOOSABLE
            .into_iter()
            .find(|r| t == r.code().to_string() || t.eq_ignore_ascii_case(r.name()))
            .ok_or_else(|| UnknownReason {
                input: s.to_string(),
            })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_names_round_trip() {
        for c in 0..=255u8 {
            if let Some(r) = RevocationReason::from_code(c) {
                assert_eq!(r.code(), c);
            } else {
                assert!(matches!(c, 6..=8 | 11..), "{c}");
            }
        }
        assert_eq!("1".parse(), Ok(RevocationReason::KeyCompromise));
        assert_eq!("keycompromise".parse(), Ok(RevocationReason::KeyCompromise));
        assert_eq!("5".parse(), Ok(RevocationReason::CessationOfOperation));
        // What `acme revoke --reason` refused before, it still refuses.
        for bad in ["2", "6", "9", "10", "-1", "01x", "cACompromise", ""] {
            assert!(bad.parse::<RevocationReason>().is_err(), "{bad}");
        }
        let e = "7".parse::<RevocationReason>().unwrap_err().to_string();
        assert!(e.contains("1 (keyCompromise)"), "{e}");
        // Escaped once, not escaped and then quoted as Debug (`\\x1b`).
        let e = "k\x1b[31m"
            .parse::<RevocationReason>()
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("revocation reason \"k\\x1b[31m\": "), "{e}");
        for (r, c) in RevocationReason::CHOOSABLE
            .iter()
            .zip(RevocationReason::CHOOSABLE_CODES)
        {
            assert_eq!(r.code().to_string(), c);
        }
    }
}
