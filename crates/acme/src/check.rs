//! The CA is a peer like any other: what it says about time is clamped before any
//! arithmetic, and the certificate it hands back is checked before it is written or
//! served.
//!
//! The rules (documented in the crate README, "How it works"):
//! - `Retry-After` (delay-seconds or HTTP-date, on orders and on renewal information) is
//!   read here, saturating, and clamped to at most `RETRY_AFTER_MAX` (one day); renewal
//!   information is asked again no sooner than `ARI_RECHECK_MIN` (a minute).
//! - An ARI window is clamped to the certificate's lifetime: not before notBefore, and
//!   not after notAfter less a tenth of the lifetime (`renewal_due`).
//! - A new certificate must be valid now (notBefore at most a little ahead, at least
//!   half of its lifetime left), carry the key we generated, name exactly the names
//!   ordered, and come in a chain of at most `MAX_CHAIN` (16) certificates
//!   (`check_result`).

use std::time::{Duration, SystemTime};

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::CertificateDer;

use crate::error::{clean, Refusal, Refused};
use crate::settings::{leaf_info, unix, LeafInfo};

/// The longest `Retry-After` honoured (one day): a CA asking for more is asked again then.
pub(crate) const RETRY_AFTER_MAX: Duration = Duration::from_secs(86_400);

/// The shortest interval between two renewal-information requests (RFC 9773 §4.3 asks
/// clients to clamp the CA's `Retry-After` to a reasonable range), unless the operator's
/// `recheck` is shorter.
pub(crate) const ARI_RECHECK_MIN: Duration = Duration::from_secs(60);

/// Most certificates in a chain from the CA: what tlskit's verifier accepts.
pub(crate) const MAX_CHAIN: usize = tlskit_verify::MAX_SUPPORTED_DEPTH;

/// Renewal is due at the latest when a tenth of the lifetime is left, whatever the window.
const LATE_MARGIN_DIV: u32 = 10;

/// Two renewals of one name are at least a twentieth of the lifetime apart.
const SPACING_DIV: u32 = 20;

/// notBefore may be ahead of our clock by this much (at most a tenth of the lifetime).
const SKEW: Duration = Duration::from_secs(300);

/// A `Retry-After` value as a delay from `now`: delay-seconds (any number of digits,
/// saturating) or an HTTP-date (a past date is zero), clamped to [`RETRY_AFTER_MAX`].
/// `None` when it is neither.
pub(crate) fn retry_after(value: &[u8], now: SystemTime) -> Option<Duration> {
    let v = std::str::from_utf8(value).ok()?.trim();
    if v.is_empty() {
        return None;
    }
    if v.bytes().all(|b| b.is_ascii_digit()) {
        // Only digits: the one failure left is overflow, which saturates.
        let secs = v.parse::<u64>().unwrap_or(u64::MAX);
        return Some(Duration::from_secs(secs).min(RETRY_AFTER_MAX));
    }
    let at = httpdate::parse_http_date(v).ok()?;
    Some(
        at.duration_since(now)
            .unwrap_or_default()
            .min(RETRY_AFTER_MAX),
    )
}

/// notAfter − notBefore (zero when inverted).
pub(crate) fn lifetime(info: &LeafInfo) -> Duration {
    info.not_after
        .duration_since(info.not_before)
        .unwrap_or_default()
}

/// The latest moment renewal may be due: notAfter less a tenth of the lifetime.
fn latest(info: &LeafInfo) -> SystemTime {
    info.not_after
        .checked_sub(lifetime(info) / LATE_MARGIN_DIV)
        .unwrap_or(info.not_before)
        .max(info.not_before)
}

/// When renewal is due by the CA's window: the window clamped to the certificate's
/// lifetime (not before notBefore, not after notAfter less a tenth of the lifetime), then
/// the point `rand01` of the way through it.
pub(crate) fn renewal_due(
    start: SystemTime,
    end: SystemTime,
    info: &LeafInfo,
    rand01: f64,
) -> SystemTime {
    let last = latest(info);
    let clamp = |t: SystemTime| t.max(info.not_before).min(last);
    let s = clamp(start);
    let e = clamp(end).max(s);
    let span = e.duration_since(s).unwrap_or_default();
    let r = if rand01.is_finite() {
        rand01.clamp(0.0, 1.0)
    } else {
        0.0
    };
    s.checked_add(span.mul_f64(r)).unwrap_or(e).min(e)
}

/// Below this lifetime a certificate is renewed at half of it (Let's Encrypt's 6-day
/// `shortlived` profile, certificates that live minutes); from it on, at two thirds.
pub(crate) const SHORT_LIFETIME: Duration = Duration::from_secs(10 * 86_400);

/// The lifetime rule, when the CA gives no renewal window: half of the way from notBefore
/// to notAfter for a certificate that lives less than [`SHORT_LIFETIME`] (a day or two of
/// CA trouble must not eat the rest of a 6-day certificate), two thirds for a longer one.
pub(crate) fn lifetime_due(info: &LeafInfo) -> SystemTime {
    let life = lifetime(info);
    let part = if life < SHORT_LIFETIME {
        life / 2
    } else {
        life.mul_f64(2.0 / 3.0)
    };
    info.not_before.checked_add(part).unwrap_or(info.not_after)
}

/// The least time between two renewals of the same names: a twentieth of the lifetime
/// of the certificate served, at least one second (so minute-long certificates renew).
pub(crate) fn min_spacing(info: &LeafInfo) -> Duration {
    (lifetime(info) / SPACING_DIV).max(Duration::from_secs(1))
}

fn refused(reason: Refusal, detail: String) -> Refused {
    Refused { reason, detail }
}

/// Check a chain (PEM, leaf first) the CA issued for `names` on a CSR for the key whose
/// SubjectPublicKeyInfo is `spki`, at `now`. `fresh`: just issued, so at least half of
/// its lifetime must be left (a stored certificate must only be unexpired).
pub(crate) fn check_result(
    chain_pem: &str,
    spki: Option<&[u8]>,
    names: &[String],
    now: SystemTime,
    fresh: bool,
) -> Result<Vec<CertificateDer<'static>>, Refused> {
    let mut chain: Vec<CertificateDer<'static>> = Vec::new();
    for c in CertificateDer::pem_slice_iter(chain_pem.as_bytes()) {
        let c = c.map_err(|e| {
            refused(
                Refusal::Unparsable,
                clean(&format!("the chain is not PEM: {e}")),
            )
        })?;
        chain.push(c);
        if chain.len() > MAX_CHAIN {
            return Err(refused(
                Refusal::ChainTooLong,
                format!("the chain has more than {MAX_CHAIN} certificates"),
            ));
        }
    }
    let leaf = chain
        .first()
        .ok_or_else(|| refused(Refusal::Unparsable, "the chain holds no certificate".into()))?;
    let info = leaf_info(leaf).ok_or_else(|| {
        refused(
            Refusal::Unparsable,
            "the certificate cannot be parsed".into(),
        )
    })?;
    check_validity(&info, now, fresh)?;
    if let Some(spki) = spki {
        let (_, cert) = x509_parser::parse_x509_certificate(leaf).map_err(|_| {
            refused(
                Refusal::Unparsable,
                "the certificate cannot be parsed".into(),
            )
        })?;
        if cert.public_key().raw != spki {
            return Err(refused(
                Refusal::WrongKey,
                "the certificate is not for the key of the request".into(),
            ));
        }
    }
    let want: std::collections::BTreeSet<String> =
        names.iter().map(|n| n.to_ascii_lowercase()).collect();
    let got: std::collections::BTreeSet<String> = info.names.iter().cloned().collect();
    if want != got {
        let missing: Vec<&str> = want.difference(&got).map(String::as_str).collect();
        let extra: Vec<&str> = got.difference(&want).map(String::as_str).collect();
        let mut parts = Vec::new();
        if !missing.is_empty() {
            parts.push(format!("lacks {}", clean(&missing.join(", "))));
        }
        if !extra.is_empty() {
            parts.push(format!("adds {}", clean(&extra.join(", "))));
        }
        return Err(refused(
            Refusal::WrongNames,
            format!(
                "the certificate's names are not those ordered: it {}",
                parts.join(" and ")
            ),
        ));
    }
    Ok(chain)
}

/// Verify `chain` (leaf first, as [`check_result`] returned it) against the CA's issuing
/// roots with tlskit's verifier (server purpose, paths of up to [`MAX_CHAIN`]), for every
/// name (a wildcard for one label under it), at `now`. Roots that do not load are a
/// configuration error, not a refusal.
pub(crate) fn check_issuer(
    chain: &[CertificateDer<'static>],
    names: &[String],
    roots: &[tlskit_store::Source],
    now: SystemTime,
) -> Result<(), crate::error::AcmeError> {
    let config_err =
        |why: String| crate::error::AcmeError::Config(format!("ACME issuer roots: {why}"));
    let (handle, report) = tlskit_store::StoreHandle::new(roots.to_vec()).map_err(|source| {
        crate::error::AcmeError::Store {
            what: "ACME issuer roots",
            source,
        }
    })?;
    if handle.current().is_empty() {
        let why = report
            .errors
            .first()
            .map(|e| e.to_string())
            .unwrap_or_else(|| "no certificates".into());
        return Err(config_err(format!("nothing loadable ({why})")));
    }
    let verifier = tlskit_verify::ChainVerifier::new(tlskit_verify::VerifierConfig {
        max_depth: MAX_CHAIN,
        max_presented: MAX_CHAIN,
        cache: None,
        ..tlskit_verify::VerifierConfig::default()
    });
    let (leaf, rest) = chain
        .split_first()
        .ok_or_else(|| refused(Refusal::Unparsable, "the chain holds no certificate".into()))?;
    let at = tlskit_verify::UnixTime::since_unix_epoch(
        now.duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default(),
    );
    for n in names {
        let probe = match n.strip_prefix("*.") {
            Some(parent) => format!("wildcard-check.{parent}"),
            None => n.clone(),
        };
        let name = tlskit_verify::ServerName::try_from(probe).map_err(|_| {
            refused(
                Refusal::WrongNames,
                format!("{} is not a DNS name", clean(n)),
            )
        })?;
        verifier
            .verify_on_handle(
                &handle,
                leaf,
                rest,
                Some(&name),
                tlskit_verify::Purpose::Server,
                at,
            )
            .map_err(|e| {
                refused(
                    Refusal::Untrusted,
                    format!(
                        "it does not verify against the issuer roots for {}: {}",
                        clean(n),
                        clean(&e.to_string())
                    ),
                )
            })?;
    }
    Ok(())
}

/// Valid at `now`: notBefore at most a little ahead (five minutes, at most a tenth of the
/// lifetime); not expired, and when `fresh` at least half of the lifetime left.
pub(crate) fn check_validity(info: &LeafInfo, now: SystemTime, fresh: bool) -> Result<(), Refused> {
    let life = lifetime(info);
    let skew = SKEW.min(life / LATE_MARGIN_DIV);
    if info.not_before > now.checked_add(skew).unwrap_or(now) {
        return Err(refused(
            Refusal::NotYetValid,
            format!(
                "it is not valid before {} (Unix time), and now is {}",
                unix(info.not_before),
                unix(now)
            ),
        ));
    }
    if info.not_after <= now {
        return Err(refused(
            Refusal::Expired,
            format!("it expired at {} (Unix time)", unix(info.not_after)),
        ));
    }
    let left = info.not_after.duration_since(now).unwrap_or_default();
    if fresh && left < life / 2 {
        return Err(refused(
            Refusal::Expired,
            format!(
                "it expires at {} (Unix time), with {} s of its {} s lifetime left",
                unix(info.not_after),
                left.as_secs(),
                life.as_secs()
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    /// Issuing roots that do not load are a configuration error that keeps the store's
    /// error typed, under the text the CLI has always printed.
    #[test]
    fn issuer_roots_that_do_not_load_keep_the_store_error() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let missing = tlskit_store::Source::File(dir.path().join("missing.pem"));
        let e = check_issuer(&[], &["a.test".into()], &[missing], SystemTime::now()).err();
        assert!(
            matches!(
                &e,
                Some(crate::error::AcmeError::Store {
                    what: "ACME issuer roots",
                    source: tlskit_store::StoreError::NothingLoadable { .. },
                })
            ),
            "{e:?}"
        );
        let text = e.map(|e| e.to_string()).unwrap_or_default();
        assert!(
            text.starts_with("ACME: ACME issuer roots: nothing loadable: no trust anchor found ("),
            "{text}"
        );
    }

    fn at(s: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(s)
    }

    fn info(nb: u64, na: u64) -> LeafInfo {
        LeafInfo {
            not_before: at(nb),
            not_after: at(na),
            serial: String::new(),
            names: vec!["a.test".into()],
        }
    }

    #[test]
    fn retry_after_saturates_and_clamps_both_forms() {
        let now = at(1_700_000_000);
        assert_eq!(retry_after(b"120", now), Some(Duration::from_secs(120)));
        assert_eq!(retry_after(b" 0 ", now), Some(Duration::ZERO));
        assert_eq!(
            retry_after(b"18446744073709551615", now),
            Some(RETRY_AFTER_MAX)
        );
        assert_eq!(retry_after(&[b'9'; 400], now), Some(RETRY_AFTER_MAX));
        assert_eq!(
            retry_after(b"Fri, 31 Dec 9999 23:59:59 GMT", now),
            Some(RETRY_AFTER_MAX)
        );
        assert_eq!(
            retry_after(b"Sun, 06 Nov 1994 08:49:37 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(
            retry_after(b"Tue, 14 Nov 2023 22:14:20 GMT", now),
            Some(Duration::from_secs(60))
        );
        for bad in [&b""[..], b"-1", b"1.5", b"soon", b"\xff"] {
            assert_eq!(retry_after(bad, now), None, "{bad:?}");
        }
    }

    #[test]
    fn renewal_window_is_clamped_to_the_lifetime() {
        let i = info(1000, 2000);
        let far = UNIX_EPOCH + Duration::from_secs(253_402_300_799); // 9999-12-31
        let past = UNIX_EPOCH - Duration::from_secs(62_135_596_800); // 0001-01-01
        assert_eq!(renewal_due(far, far, &i, 0.5), at(1900));
        assert_eq!(renewal_due(past, past, &i, 0.5), at(1000));
        assert_eq!(renewal_due(past, far, &i, 0.0), at(1000));
        assert_eq!(renewal_due(past, far, &i, 1.0), at(1900));
        assert_eq!(renewal_due(at(1500), at(1600), &i, 0.5), at(1550));
        assert_eq!(renewal_due(at(1600), at(1500), &i, f64::NAN), at(1600));
        // Inverted validity: due at notBefore.
        assert_eq!(renewal_due(far, far, &info(2000, 1000), 0.5), at(2000));
        // 1,000 s: short, half of the lifetime.
        assert_eq!(lifetime_due(&i), at(1500));
        assert_eq!(min_spacing(&i), Duration::from_secs(50));
        assert_eq!(min_spacing(&info(0, 10)), Duration::from_secs(1));
    }

    #[test]
    fn validity_needs_now_and_half_the_lifetime() {
        let i = info(1000, 2000);
        assert!(check_validity(&i, at(1200), true).is_ok());
        assert_eq!(
            check_validity(&i, at(899), true).map_err(|e| e.reason),
            Err(Refusal::NotYetValid)
        );
        // Within the skew (a tenth of 1000 s).
        assert!(check_validity(&i, at(950), true).is_ok());
        assert_eq!(
            check_validity(&i, at(2000), false).map_err(|e| e.reason),
            Err(Refusal::Expired)
        );
        assert_eq!(
            check_validity(&i, at(1600), true).map_err(|e| e.reason),
            Err(Refusal::Expired)
        );
        assert!(check_validity(&i, at(1600), false).is_ok());
    }
}
