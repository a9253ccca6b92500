//! Revocation on the file CA: revocation records in `index.jsonl` and CRLs.
//!
//! A revocation is one more line appended to `index.jsonl` (fsync'd, under the CA's
//! lock, like an issuance): `{"revoke":"SERIAL","reason":"keyCompromise","revoked_at":"..."}`.
//! Nothing already written is rewritten, so a crash leaves either the whole record or
//! none, and revoking costs one append however large the index is. Readers fold the
//! records into the entries they name ([`super::IndexEntry::revoked_at`]); lines written
//! before revocation existed parse as they always did.
//!
//! A CRL (`write_crl`) is an RFC 5280 v2 CRL signed by the CA's key (a key file or a
//! token key): CRLNumber (the last one kept in `DIR/crlnumber`, incremented under the
//! lock, so numbers only grow), an AuthorityKeyIdentifier equal to the CA certificate's
//! subjectKeyIdentifier, one entry per revoked serial with its revocation date and, unless
//! the reason is `unspecified` (which RFC 5280 asks to leave out), a reasonCode entry
//! extension. Entries stay on the CRL after the certificate expires.

use std::path::Path;
use std::time::{Duration, SystemTime};

use rcgen::{
    CertificateRevocationListParams, Issuer, KeyIdMethod, RevokedCertParams, SerialNumber,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tlskit_x509::RevocationReason;
use x509_parser::prelude::*;

use super::{index_lines, lock_ca, Ca, IndexLine, CERT, INDEX, LOCK};
use crate::{fsx, PkiError, Result};

/// The file, in a CA directory, holding the number of the last CRL written (decimal).
pub const CRL_NUMBER: &str = "crlnumber";

/// Longest `next_update` a CRL may be given: 10 years (a CRL that old is a mistake).
pub const MAX_NEXT_UPDATE: Duration = Duration::from_secs(3650 * 86_400);

/// A revocation line of `index.jsonl`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RevokeRecord {
    /// The serial revoked, canonical lower-case hex.
    pub(super) revoke: String,
    pub(super) reason: RevocationReason,
    /// RFC 3339, whole seconds.
    pub(super) revoked_at: String,
}

/// A revoked certificate, as the CA's index records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct RevokedEntry {
    /// The serial, canonical lower-case hex (no DER sign byte, as the index writes it).
    pub serial: String,
    /// Why it was revoked.
    pub reason: RevocationReason,
    /// When it was revoked (RFC 3339, whole seconds).
    pub revoked_at: String,
    /// When it was revoked, Unix seconds.
    #[serde(skip)]
    pub revoked_at_unix: i64,
}

impl RevokedEntry {
    /// When it was revoked.
    pub fn revoked_at_time(&self) -> SystemTime {
        let secs = self.revoked_at_unix.max(0).unsigned_abs();
        SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
    }
}

/// What [`Ca::write_crl`] wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct CrlSummary {
    /// The CRLNumber of this CRL.
    pub number: u64,
    /// thisUpdate (RFC 3339).
    pub this_update: String,
    /// nextUpdate (RFC 3339).
    pub next_update: String,
    /// How many certificates it lists.
    pub revoked: usize,
    /// The authority key identifier it carries (hex; the CA certificate's SKI).
    pub authority_key_id: String,
    /// Size of the DER encoding, bytes.
    pub der_bytes: usize,
}

/// A signed CRL (from [`Ca::crl`]).
#[derive(Debug, Clone)]
pub struct Crl {
    der: Vec<u8>,
    /// What it holds.
    pub summary: CrlSummary,
}

impl Crl {
    /// The CRL, DER.
    pub fn der(&self) -> &[u8] {
        &self.der
    }
    /// The CRL, PEM (`-----BEGIN X509 CRL-----`).
    pub fn pem(&self) -> String {
        crate::key::pem_encode("X509 CRL", &self.der)
    }
}

/// The canonical text of a serial given as the DER INTEGER's content bytes (a leading
/// `00` sign byte or zero bytes are dropped).
fn canonical(serial: &[u8]) -> Result<String> {
    if serial.is_empty() || serial.len() > 21 {
        return Err(PkiError::Other(format!(
            "a certificate serial has 1 to 20 bytes, not {}",
            serial.len()
        )));
    }
    Ok(tlskit_x509::text::serial(serial))
}

/// Parse a serial typed by a user: hex, with or without colons, with or without a
/// leading `00` (the DER sign byte) or `0x`. Returns the canonical text of
/// [`RevokedEntry::serial`] and [`super::IndexEntry::serial`].
pub fn parse_serial(text: &str) -> Result<String> {
    let t = text.trim();
    let t = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    let digits: String = t.chars().filter(|c| *c != ':').collect();
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_hexdigit()) || digits.len() > 42 {
        return Err(PkiError::Other(format!(
            "serial \"{}\": expected hex digits (colons allowed), at most 20 bytes",
            tlskit_x509::text::escape(text)
        )));
    }
    let padded = if !digits.len().is_multiple_of(2) {
        format!("0{digits}")
    } else {
        digits
    };
    Ok(tlskit_x509::text::serial_from_hex(&padded))
}

fn unix(t: SystemTime) -> Result<i64> {
    let d = t.duration_since(SystemTime::UNIX_EPOCH).map_err(|_| {
        PkiError::Other("a revocation time before 1970 is not a revocation time".into())
    })?;
    i64::try_from(d.as_secs()).map_err(|_| PkiError::Other("a time too far in the future".into()))
}

fn parse_time(s: &str) -> Option<i64> {
    ::time::OffsetDateTime::parse(s, &::time::format_description::well_known::Rfc3339)
        .ok()
        .map(|t| t.unix_timestamp())
}

/// Every revocation in the index at `dir` (by serial, the first record of each), and
/// the issued serials with their certificate hashes.
struct Folded {
    issued: std::collections::HashMap<String, String>,
    revoked: Vec<RevokedEntry>,
}

fn fold(dir: &Path) -> Result<Folded> {
    let index = dir.join(INDEX);
    let mut issued = std::collections::HashMap::new();
    let mut revoked: Vec<RevokedEntry> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    index_lines(&index, |n, line| {
        match line {
            IndexLine::Issue(e) => {
                issued.insert(tlskit_x509::text::serial_from_hex(&e.serial), e.sha256);
            }
            IndexLine::Revoke(r) => {
                let serial = tlskit_x509::text::serial_from_hex(&r.revoke);
                if seen.insert(serial.clone()) {
                    let unix = parse_time(&r.revoked_at).ok_or_else(|| {
                        PkiError::bad(
                            &index,
                            format!("line {n}: revoked_at is not an RFC 3339 time"),
                        )
                    })?;
                    revoked.push(RevokedEntry {
                        serial,
                        reason: r.reason,
                        revoked_at: r.revoked_at,
                        revoked_at_unix: unix,
                    });
                }
            }
        }
        Ok(())
    })?;
    Ok(Folded { issued, revoked })
}

/// Whether `serial` (canonical text) is revoked in the CA at `dir`.
pub(super) fn revocation_in(dir: &Path, serial: &str) -> Result<Option<RevokedEntry>> {
    Ok(fold(dir)?.revoked.into_iter().find(|r| r.serial == serial))
}

/// Every revocation of the CA at `dir`, in the order they were recorded.
pub fn revocations(dir: &Path) -> Result<Vec<RevokedEntry>> {
    check_ca_dir(dir)?;
    Ok(fold(dir)?.revoked)
}

fn check_ca_dir(dir: &Path) -> Result<()> {
    if !dir.join(CERT).exists() || !dir.join(INDEX).exists() {
        return Err(PkiError::bad(
            dir,
            format!("not a CA directory (no {CERT} / {INDEX}); create one with `tlskit ca init`"),
        ));
    }
    Ok(())
}

/// Revoke the certificate with `serial` (canonical text, see [`parse_serial`]) in the CA
/// at `dir`, without opening its key (so a token CA needs no PIN to revoke). This is
/// [`Ca::revoke`] for callers that hold no [`Ca`]; `on_lock_wait` as in
/// `IssueOptions::on_lock_wait`. `expect_sha256`: refuse unless the index entry's
/// certificate hash is this one (revocation by certificate).
pub fn revoke(
    dir: &Path,
    serial: &str,
    reason: RevocationReason,
    at: SystemTime,
    on_lock_wait: Option<fn(&Path)>,
) -> Result<RevokedEntry> {
    revoke_checked(dir, serial, None, reason, at, on_lock_wait)
}

/// [`revoke`] for a certificate given as DER: its serial, and a check that the index holds
/// this very certificate (its SHA-256), so that a certificate from another CA with a
/// colliding serial is refused.
pub fn revoke_certificate(
    dir: &Path,
    cert_der: &[u8],
    reason: RevocationReason,
    at: SystemTime,
    on_lock_wait: Option<fn(&Path)>,
) -> Result<RevokedEntry> {
    let (_, x) = X509Certificate::from_der(cert_der).map_err(|e| PkiError::Failed {
        context: "reading the certificate to revoke".into(),
        source: Box::new(e),
    })?;
    let serial = canonical(x.raw_serial())?;
    let sha = tlskit_x509::text::hex(&Sha256::digest(cert_der));
    revoke_checked(dir, &serial, Some(&sha), reason, at, on_lock_wait)
}

fn revoke_checked(
    dir: &Path,
    serial: &str,
    expect_sha256: Option<&str>,
    reason: RevocationReason,
    at: SystemTime,
    on_lock_wait: Option<fn(&Path)>,
) -> Result<RevokedEntry> {
    check_ca_dir(dir)?;
    let at = unix(at)?;
    let serial = tlskit_x509::text::serial_from_hex(serial);
    let _lock = lock_ca(&dir.join(LOCK), on_lock_wait)?;
    let folded = fold(dir)?;
    let Some(sha) = folded.issued.get(&serial) else {
        return Err(PkiError::NotIssued {
            serial,
            dir: dir.to_path_buf(),
        });
    };
    if let Some(want) = expect_sha256 {
        if !sha.eq_ignore_ascii_case(want) {
            return Err(PkiError::NotIssued {
                serial,
                dir: dir.to_path_buf(),
            });
        }
    }
    if let Some(r) = folded.revoked.into_iter().find(|r| r.serial == serial) {
        return Err(PkiError::AlreadyRevoked {
            serial,
            reason: r.reason,
            revoked_at: r.revoked_at,
        });
    }
    let record = RevokeRecord {
        revoke: serial.clone(),
        reason,
        revoked_at: tlskit_x509::datetime::rfc3339(at),
    };
    super::append_index_line(&dir.join(INDEX), &record)?;
    Ok(RevokedEntry {
        serial,
        reason,
        revoked_at: record.revoked_at,
        revoked_at_unix: at,
    })
}

fn read_crl_number(path: &Path) -> Result<u64> {
    match tlskit_io::read_to_string(path, 64) {
        Ok(t) => t
            .trim()
            .parse::<u64>()
            .map_err(|_| PkiError::bad(path, "not a decimal CRL number")),
        Err(tlskit_io::ReadError {
            kind: tlskit_io::ReadErrorKind::Io(e),
            ..
        }) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(e.into()),
    }
}

impl Ca {
    /// Revoke the certificate with this serial (the DER INTEGER's content bytes; a
    /// leading `00` sign byte is fine), recording `reason` and `at` in the index under
    /// the CA's lock. Errors: [`PkiError::NotIssued`] when this CA's index has no such
    /// serial, [`PkiError::AlreadyRevoked`] when it is revoked already (nothing is
    /// written then).
    pub fn revoke(
        &self,
        serial: &[u8],
        reason: RevocationReason,
        at: SystemTime,
    ) -> Result<RevokedEntry> {
        revoke(&self.dir, &canonical(serial)?, reason, at, None)
    }

    /// [`Self::revoke`] for a certificate given as DER (ACME's revokeCert): refused with
    /// [`PkiError::NotIssued`] unless this CA's index holds this very certificate.
    pub fn revoke_certificate(
        &self,
        cert_der: &[u8],
        reason: RevocationReason,
        at: SystemTime,
    ) -> Result<RevokedEntry> {
        revoke_certificate(&self.dir, cert_der, reason, at, None)
    }

    /// The revocation of this serial (DER INTEGER content bytes), or `None` when it is
    /// not revoked (or not issued by this CA). Reads the index (no lock: appends are
    /// whole lines).
    pub fn revocation(&self, serial: &[u8]) -> Result<Option<RevokedEntry>> {
        revocation_in(&self.dir, &canonical(serial)?)
    }

    /// Every revocation, in the order recorded.
    pub fn revocations(&self) -> Result<Vec<RevokedEntry>> {
        revocations(&self.dir)
    }

    /// Sign a CRL listing every revoked certificate, valid from now for `next_update`
    /// (1 second to [`MAX_NEXT_UPDATE`]). Takes the CA's lock and increments the
    /// CRLNumber kept in `DIR/crlnumber` (a number, once used, is never used again, even
    /// when the caller then fails to publish the CRL).
    pub fn crl(&self, next_update: Duration) -> Result<Crl> {
        if next_update.is_zero() || next_update > MAX_NEXT_UPDATE {
            return Err(PkiError::Other(format!(
                "a CRL's next update must be 1 second to {} days away",
                MAX_NEXT_UPDATE.as_secs() / 86_400
            )));
        }
        let (_, x) = X509Certificate::from_der(&self.cert_der)
            .map_err(PkiError::parse(self.dir.join(CERT), "not a certificate"))?;
        let ski = x
            .extensions()
            .iter()
            .find_map(|e| match e.parsed_extension() {
                ParsedExtension::SubjectKeyIdentifier(k) => Some(k.0.to_vec()),
                _ => None,
            });
        // RFC 5280 5.2.1: the CRL's AKI is the issuer certificate's SKI. A CA certificate
        // without one (not one tlskit made) gets rcgen's SHA-256 method.
        let key_identifier_method = match &ski {
            Some(k) => KeyIdMethod::PreSpecified(k.clone()),
            None => KeyIdMethod::Sha256,
        };
        let issuer = Issuer::from_ca_cert_der(&self.cert_der.as_slice().into(), &self.key)
            .map_err(PkiError::rcgen("reading the CA certificate"))?;
        let now = ::time::OffsetDateTime::now_utc()
            .replace_nanosecond(0)
            .map_err(PkiError::failed("reading the clock"))?;
        let next = now + next_update;

        let _lock = lock_ca(&self.dir.join(LOCK), None)?;
        let folded = fold(&self.dir)?;
        let number_path = self.dir.join(CRL_NUMBER);
        let number = read_crl_number(&number_path)?
            .checked_add(1)
            .ok_or_else(|| PkiError::bad(&number_path, "the CRL number cannot grow further"))?;
        let mut revoked_certs = Vec::with_capacity(folded.revoked.len());
        for r in &folded.revoked {
            let bytes = hex_bytes(&r.serial).ok_or_else(|| {
                PkiError::bad(self.dir.join(INDEX), "a revoked serial is not hex")
            })?;
            revoked_certs.push(RevokedCertParams {
                serial_number: SerialNumber::from_slice(&bytes),
                revocation_time: ::time::OffsetDateTime::from_unix_timestamp(r.revoked_at_unix)
                    .map_err(PkiError::failed("a revocation time"))?,
                reason_code: rcgen_reason(r.reason),
                invalidity_date: None,
            });
        }
        let params = CertificateRevocationListParams {
            this_update: now,
            next_update: next,
            crl_number: SerialNumber::from_slice(minimal(&number.to_be_bytes())),
            issuing_distribution_point: None,
            revoked_certs,
            key_identifier_method,
        };
        let crl = params.signed_by(&issuer).map_err(|e| match e {
            rcgen::Error::IssuerNotCrlSigner => PkiError::Refused(
                "refusing to sign a CRL: the CA certificate's keyUsage lacks cRLSign".into(),
            ),
            e => self.key.explain(PkiError::rcgen("signing the CRL")(e)),
        })?;
        fsx::replace_state(&number_path, format!("{number}\n").as_bytes())?;
        let der = crl.der().to_vec();
        // The AKI as written (read back: rcgen derived it when the CA has no SKI).
        let aki = CertificateRevocationList::from_der(&der)
            .ok()
            .and_then(|(_, c)| {
                c.extensions()
                    .iter()
                    .find_map(|e| match e.parsed_extension() {
                        ParsedExtension::AuthorityKeyIdentifier(a) => {
                            a.key_identifier.as_ref().map(|k| k.0.to_vec())
                        }
                        _ => None,
                    })
            })
            .or(ski)
            .unwrap_or_default();
        let fmt = |t: ::time::OffsetDateTime| tlskit_x509::datetime::rfc3339(t.unix_timestamp());
        Ok(Crl {
            summary: CrlSummary {
                number,
                this_update: fmt(now),
                next_update: fmt(next),
                revoked: folded.revoked.len(),
                authority_key_id: tlskit_x509::text::hex(&aki),
                der_bytes: der.len(),
            },
            der,
        })
    }

    /// [`Self::crl`], written to `out` as PEM (or DER when `der`), atomically: a
    /// temporary file in `out`'s directory, synced, renamed over the old CRL (a CRL is
    /// republished in place, so an existing file is replaced, without a backup).
    pub fn write_crl(&self, out: &Path, next_update: Duration, der: bool) -> Result<CrlSummary> {
        let crl = self.crl(next_update)?;
        if der {
            tlskit_io::replace(out, &[crl.der()], false)?;
        } else {
            tlskit_io::replace(out, &[crl.pem().as_bytes()], false)?;
        }
        Ok(crl.summary)
    }
}

/// A big-endian number without its leading zero bytes (one byte kept), for a minimal
/// DER INTEGER.
fn minimal(b: &[u8]) -> &[u8] {
    let start = b
        .iter()
        .position(|&x| x != 0)
        .unwrap_or(b.len().saturating_sub(1));
    &b[start..]
}

fn hex_bytes(h: &str) -> Option<Vec<u8>> {
    if !h.len().is_multiple_of(2) {
        return None;
    }
    (0..h.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(h.get(i..i + 2)?, 16).ok())
        .collect()
}

fn rcgen_reason(r: RevocationReason) -> Option<rcgen::RevocationReason> {
    use rcgen::RevocationReason as R;
    Some(match r.code() {
        // RFC 5280 5.3.1: "the reason code CRL entry extension SHOULD be absent instead of
        // using the unspecified (0) reasonCode value".
        1 => R::KeyCompromise,
        2 => R::CaCompromise,
        3 => R::AffiliationChanged,
        4 => R::Superseded,
        5 => R::CessationOfOperation,
        9 => R::PrivilegeWithdrawn,
        10 => R::AaCompromise,
        _ => return None,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::ca::{index, init, issue, InitOptions, IssueOptions};
    use crate::cert;
    use std::fs;
    use std::path::PathBuf;

    fn ca_with(n: usize) -> (tempfile::TempDir, PathBuf, Vec<String>) {
        let t = tempfile::tempdir().unwrap();
        let ca = t.path().join("ca");
        init(&ca, &InitOptions::new().days(3650)).unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let names = cert::names("CN=a.example", &[]).unwrap();
        let csr = t.path().join("a.csr");
        fs::write(&csr, cert::csr_pem(&key, &names).unwrap()).unwrap();
        let serials = (0..n)
            .map(|_| issue(&ca, &csr, &IssueOptions::new()).unwrap().1.serial)
            .collect();
        (t, ca, serials)
    }

    fn bytes(serial: &str) -> Vec<u8> {
        hex_bytes(serial).unwrap()
    }

    #[test]
    fn serials_parse_in_every_usual_form() {
        assert_eq!(parse_serial("0a1B").unwrap(), "0a1b");
        assert_eq!(parse_serial("00:85:c2").unwrap(), "85c2");
        assert_eq!(parse_serial("0x85C2").unwrap(), "85c2");
        assert_eq!(parse_serial("a1b").unwrap(), "0a1b");
        for bad in ["", "zz", "12 34", &"ab".repeat(22)] {
            assert!(parse_serial(bad).is_err(), "{bad}");
        }
        // Escaped once, not escaped and then quoted as Debug (`\\x1b`).
        let e = parse_serial("5c\x1b").unwrap_err().to_string();
        assert!(e.contains("serial \"5c\\x1b\": expected hex"), "{e}");
    }

    #[test]
    fn revoke_records_once_and_refuses_unknown_and_repeated_serials() {
        let (_t, dir, serials) = ca_with(2);
        let ca = Ca::open(&dir).unwrap();
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        assert_eq!(ca.revocation(&bytes(&serials[0])).unwrap(), None);
        // With the DER sign byte in front: the same serial.
        let mut signed = vec![0u8];
        signed.extend(bytes(&serials[0]));
        let r = ca
            .revoke(&signed, RevocationReason::KeyCompromise, at)
            .unwrap();
        assert_eq!(r.serial, serials[0]);
        assert_eq!(r.revoked_at, "2027-01-15T08:00:00Z");
        assert_eq!(r.revoked_at_time(), at);
        assert_eq!(ca.revocation(&bytes(&serials[0])).unwrap(), Some(r.clone()));
        assert_eq!(ca.revocation(&bytes(&serials[1])).unwrap(), None);

        let e = ca
            .revoke(&bytes(&serials[0]), RevocationReason::Superseded, at)
            .unwrap_err();
        assert!(
            matches!(
                e,
                PkiError::AlreadyRevoked {
                    reason: RevocationReason::KeyCompromise,
                    ..
                }
            ),
            "{e}"
        );
        assert!(
            e.to_string().contains("already revoked (keyCompromise"),
            "{e}"
        );
        let e = ca
            .revoke(&[0x12, 0x34], RevocationReason::Superseded, at)
            .unwrap_err();
        assert!(matches!(e, PkiError::NotIssued { .. }), "{e}");
        assert!(e.to_string().contains("serial 1234"), "{e}");

        // One record was appended; `index` folds it into its entry.
        let text = fs::read_to_string(dir.join(INDEX)).unwrap();
        assert_eq!(text.lines().count(), 3, "{text}");
        let idx = index(&dir).unwrap();
        assert_eq!(idx.len(), 2);
        assert_eq!(
            idx[0].revocation_reason,
            Some(RevocationReason::KeyCompromise)
        );
        assert_eq!(idx[0].revoked_at.as_deref(), Some("2027-01-15T08:00:00Z"));
        assert_eq!(idx[1].revoked_at, None);
        assert_eq!(ca.revocations().unwrap(), vec![r]);
    }

    #[test]
    fn revocations_under_the_lock_are_serialized() {
        let (_t, dir, serials) = ca_with(1);
        let now = SystemTime::now();
        // Eight threads race to revoke one serial: exactly one wins.
        let wins: usize = std::thread::scope(|s| {
            let hs: Vec<_> = (0..8)
                .map(|_| {
                    s.spawn(|| {
                        revoke(&dir, &serials[0], RevocationReason::Superseded, now, None).is_ok()
                    })
                })
                .collect();
            hs.into_iter().map(|h| usize::from(h.join().unwrap())).sum()
        });
        assert_eq!(wins, 1);
        assert_eq!(revocations(&dir).unwrap().len(), 1);
    }

    #[test]
    fn revoke_by_certificate_checks_it_is_this_cas() {
        let (t, dir, _) = ca_with(0);
        let key = rcgen::KeyPair::generate().unwrap();
        let names = cert::names("CN=b.example", &[]).unwrap();
        let csr = t.path().join("b.csr");
        fs::write(&csr, cert::csr_pem(&key, &names).unwrap()).unwrap();
        let (pem, entry) = issue(&dir, &csr, &IssueOptions::new()).unwrap();
        let der = crate::key::pem_blocks(pem.as_bytes()).unwrap().unwrap()[0]
            .1
            .clone();
        let mut other = der.clone();
        let last = other.len() - 1;
        other[last] ^= 1; // same serial, another certificate
        let e = revoke_certificate(
            &dir,
            &other,
            RevocationReason::KeyCompromise,
            SystemTime::now(),
            None,
        )
        .unwrap_err();
        assert!(matches!(e, PkiError::NotIssued { .. }), "{e}");
        let r = revoke_certificate(
            &dir,
            &der,
            RevocationReason::KeyCompromise,
            SystemTime::now(),
            None,
        )
        .unwrap();
        assert_eq!(r.serial, entry.serial);
    }

    #[test]
    fn crl_lists_revocations_with_number_aki_and_reasons() {
        let (t, dir, serials) = ca_with(3);
        let ca = Ca::open(&dir).unwrap();
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        ca.revoke(&bytes(&serials[0]), RevocationReason::KeyCompromise, at)
            .unwrap();
        ca.revoke(&bytes(&serials[2]), RevocationReason::Unspecified, at)
            .unwrap();
        let out = t.path().join("crl.pem");
        let s1 = ca
            .write_crl(&out, Duration::from_secs(7 * 86_400), false)
            .unwrap();
        let s2 = ca
            .write_crl(&out, Duration::from_secs(7 * 86_400), false)
            .unwrap();
        assert_eq!((s1.number, s2.number), (1, 2));
        assert_eq!(fs::read_to_string(dir.join(CRL_NUMBER)).unwrap(), "2\n");
        assert_eq!(s2.revoked, 2);

        let pem = fs::read(&out).unwrap();
        let blocks = crate::key::pem_blocks(&pem).unwrap().unwrap();
        assert_eq!(blocks[0].0, "X509 CRL");
        assert_eq!(blocks[0].1.len(), s2.der_bytes);
        let (_, crl) = CertificateRevocationList::from_der(&blocks[0].1).unwrap();
        assert_eq!(crl.version(), Some(X509Version::V2));
        assert_eq!(crl.crl_number().map(|n| n.to_u64_digits()), Some(vec![2]));
        // The AKI is the CA certificate's SKI.
        let ca_der = crate::key::pem_blocks(&fs::read(dir.join(CERT)).unwrap())
            .unwrap()
            .unwrap()[0]
            .1
            .clone();
        let (_, ca_x) = X509Certificate::from_der(&ca_der).unwrap();
        let ski = ca_x
            .extensions()
            .iter()
            .find_map(|e| match e.parsed_extension() {
                ParsedExtension::SubjectKeyIdentifier(k) => Some(k.0.to_vec()),
                _ => None,
            })
            .unwrap();
        let aki = crl
            .extensions()
            .iter()
            .find_map(|e| match e.parsed_extension() {
                ParsedExtension::AuthorityKeyIdentifier(a) => {
                    a.key_identifier.as_ref().map(|k| k.0.to_vec())
                }
                _ => None,
            })
            .unwrap();
        assert_eq!(aki, ski);
        assert_eq!(s2.authority_key_id, tlskit_x509::text::hex(&ski));
        assert_eq!(crl.issuer(), ca_x.subject());
        let next = crl.next_update().unwrap().timestamp() - crl.last_update().timestamp();
        assert_eq!(next, 7 * 86_400);
        crl.verify_signature(ca_x.public_key()).unwrap();

        let entries: Vec<_> = crl.iter_revoked_certificates().collect();
        assert_eq!(entries.len(), 2);
        assert_eq!(
            tlskit_x509::text::serial(entries[0].raw_serial()),
            serials[0]
        );
        assert_eq!(entries[0].revocation_date.timestamp(), 1_800_000_000);
        assert_eq!(
            entries[0].reason_code().map(|(_, r)| r.0),
            Some(1),
            "keyCompromise"
        );
        assert_eq!(
            tlskit_x509::text::serial(entries[1].raw_serial()),
            serials[2]
        );
        assert!(
            entries[1].reason_code().is_none(),
            "unspecified is left out"
        );

        let der_out = t.path().join("crl.der");
        let s3 = ca
            .write_crl(&der_out, Duration::from_secs(3600), true)
            .unwrap();
        assert_eq!(s3.number, 3);
        assert!(CertificateRevocationList::from_der(&fs::read(&der_out).unwrap()).is_ok());
        for bad in [Duration::ZERO, MAX_NEXT_UPDATE + Duration::from_secs(1)] {
            assert!(ca.crl(bad).is_err());
        }
        assert_eq!(fs::read_to_string(dir.join(CRL_NUMBER)).unwrap(), "3\n");
    }

    /// A CRL of 10,000 revocations is built, signed and holds every one (0.3 s in a
    /// debug build, so it runs with the others). The time is printed, never asserted:
    /// measure with `cargo test -p tlskit-pki --release --lib crl_of_10000 -- --nocapture`.
    #[test]
    fn crl_of_10000_revocations() {
        let (_t, dir, _) = ca_with(0);
        // Index lines written directly (issuing 10,000 certificates is not what is measured).
        let mut text = String::new();
        // 128-bit serials as `issue` draws them (first byte 01..7f), from a fixed xorshift.
        let mut x: u128 = 0x2545_f491_4f6c_dd1d_9e37_79b9_7f4a_7c15;
        let mut serials = Vec::new();
        for _ in 0..10_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mut b = x.to_be_bytes();
            b[0] = 1 + b[0] % 0x7f;
            let serial = tlskit_x509::text::hex(&b);
            serials.push(serial.clone());
            text.push_str(&format!(r#"{{"serial":"{serial}","subject":"CN=x","sans":[],"profile":"server","not_before":"2026-01-01T00:00:00Z","not_after":"2027-01-01T00:00:00Z","sha256":"00","issued_at":"2026-01-01T00:00:00Z"}}"#));
            text.push('\n');
            text.push_str(&format!(r#"{{"revoke":"{serial}","reason":"keyCompromise","revoked_at":"2026-06-01T00:00:00Z"}}"#));
            text.push('\n');
        }
        fs::write(dir.join(INDEX), text).unwrap();
        let ca = Ca::open(&dir).unwrap();
        let start = std::time::Instant::now();
        let crl = ca.crl(Duration::from_secs(7 * 86_400)).unwrap();
        let took = start.elapsed();
        assert_eq!(crl.summary.revoked, 10_000);
        // The DER itself: signed by the CA, every serial listed once, in index order.
        let ca_der = crate::key::pem_blocks(&fs::read(dir.join(CERT)).unwrap())
            .unwrap()
            .unwrap()[0]
            .1
            .clone();
        let (_, ca_x) = X509Certificate::from_der(&ca_der).unwrap();
        let (_, parsed) = CertificateRevocationList::from_der(crl.der()).unwrap();
        parsed.verify_signature(ca_x.public_key()).unwrap();
        let listed: Vec<String> = parsed
            .iter_revoked_certificates()
            .map(|e| tlskit_x509::text::serial(e.raw_serial()))
            .collect();
        assert_eq!(listed, serials);
        println!(
            "10000 revocations: DER {} bytes, PEM {} bytes, {:?}",
            crl.der().len(),
            crl.pem().len(),
            took
        );
    }
}
