//! The vocabulary of every ACME module: the settings (`--acme-*`) and the
//! small helpers on names, times and certificates that the storage, the client, the
//! challenges and the renewal manager share.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tlskit_store::Source;

use crate::error::{clean, AcmeError};

/// How the CA checks that we control a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChallengeKind {
    /// A token served over plain HTTP on port 80 (RFC 8555 §8.3).
    Http01,
    /// A validation certificate served over TLS on port 443 with ALPN `acme-tls/1`
    /// (RFC 8737).
    TlsAlpn01,
    /// A TXT record at `_acme-challenge.NAME` (RFC 8555 §8.4), written through
    /// [`DnsSettings`]: the only challenge for wildcard names.
    Dns01,
}

impl ChallengeKind {
    /// Parse `http-01` or `tls-alpn-01`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "http-01" => Some(Self::Http01),
            "tls-alpn-01" => Some(Self::TlsAlpn01),
            "dns-01" => Some(Self::Dns01),
            _ => None,
        }
    }
    /// The RFC name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Http01 => "http-01",
            Self::TlsAlpn01 => "tls-alpn-01",
            Self::Dns01 => "dns-01",
        }
    }
}

/// What the server (or a command) needs to get certificates from an ACME CA.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AcmeSettings {
    /// The CA's directory URL (`https://acme-v02.api.letsencrypt.org/directory`).
    pub directory: String,
    /// DNS names of the certificate (the first names the storage entry).
    pub domains: Vec<String>,
    /// The storage directory (account, certificates, locks).
    pub storage: PathBuf,
    /// Contact address for the account.
    pub email: Option<String>,
    /// Trust anchors for the CA's HTTPS; empty: the system store.
    pub roots: Vec<Source>,
    /// The rule set the CA's HTTPS certificate is checked against (`--acme-roots-profile`;
    /// default: the verifier's default profile).
    pub roots_profile: tlskit_verify::Profile,
    /// Rules not checked on the CA's HTTPS certificate (`--acme-roots-allow`).
    pub roots_allow: Vec<tlskit_verify::Rule>,
    /// Trust anchors the CA's certificates must chain to (its issuing roots); empty: not
    /// checked (an ACME directory does not publish them).
    pub issuer_roots: Vec<Source>,
    /// Challenge type.
    pub challenge: ChallengeKind,
    /// Certificate profile to ask for (draft-ietf-acme-profiles), if any.
    pub profile: Option<String>,
    /// Most time between two renewal checks (the CA's ARI `Retry-After` is used when
    /// shorter). Default 6 h.
    pub recheck: Duration,
    /// First delay after a failure; it doubles at each failure up to one hour, with
    /// jitter. Default 5 s.
    pub retry_base: Duration,
    /// Where DNS-01's TXT records are written and checked (`--acme-dns-*`).
    pub dns: DnsSettings,
}

impl AcmeSettings {
    /// Defaults for everything but the CA, the names and the storage directory.
    pub fn new(directory: String, domains: Vec<String>, storage: PathBuf) -> Self {
        Self {
            directory,
            domains,
            storage,
            email: None,
            roots: Vec::new(),
            roots_profile: tlskit_verify::Profile::default(),
            roots_allow: Vec::new(),
            issuer_roots: Vec::new(),
            challenge: ChallengeKind::TlsAlpn01,
            profile: None,
            recheck: Duration::from_secs(6 * 3600),
            retry_base: Duration::from_secs(5),
            dns: DnsSettings::default(),
        }
    }

    /// Check names and URL: lower-case DNS names (a leading `*.` allowed), an https URL.
    pub fn check(&self) -> Result<(), AcmeError> {
        if self.domains.is_empty() {
            return Err(AcmeError::Config(
                "no domain name to get a certificate for".into(),
            ));
        }
        for d in &self.domains {
            if domain(d).ok().as_deref() != Some(d.as_str()) {
                return Err(AcmeError::Config(format!(
                    "{}: not a DNS name in A-label form",
                    clean(d)
                )));
            }
            let body = d.strip_prefix("*.").unwrap_or(d);
            let ok = !body.is_empty()
                && body.len() <= 253
                && body.split('.').all(|l| {
                    !l.is_empty()
                        && l.len() <= 63
                        && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                        && !l.starts_with('-')
                        && !l.ends_with('-')
                });
            if !ok {
                return Err(AcmeError::Config(format!(
                    "{}: not a DNS name (use the A-label form for internationalised names)",
                    clean(d)
                )));
            }
        }
        self.check_dns()?;
        if !self.directory.starts_with("https://") {
            return Err(AcmeError::Config(format!(
                "{}: the ACME directory must be an https:// URL",
                clean(&self.directory)
            )));
        }
        Ok(())
    }
}

/// DNS-01's settings: who writes the TXT records (an RFC 2136 server with a TSIG key, or
/// a hook program) and where their arrival is checked.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct DnsSettings {
    /// The server taking RFC 2136 UPDATE messages (`--acme-dns-update ADDR`).
    pub update: Option<SocketAddr>,
    /// The BIND key file whose TSIG key signs the updates (`--acme-dns-tsig-key FILE`).
    pub tsig_key: Option<PathBuf>,
    /// Where propagation is checked (`--acme-dns-resolver ADDR`); default: the zone's
    /// authoritative servers.
    pub resolver: Option<SocketAddr>,
    /// The hook run as `PROGRAM add|remove NAME VALUE` (`--acme-dns-exec PROGRAM`).
    pub exec: Option<PathBuf>,
    /// Longest wait for every server to answer with the records. Default 120 s.
    pub propagation_timeout: Duration,
    /// Longest run of one hook or one UPDATE exchange. Default 30 s.
    pub step_timeout: Duration,
    /// The records' TTL in seconds. Default 60.
    pub ttl: u32,
}

impl Default for DnsSettings {
    fn default() -> Self {
        Self {
            update: None,
            tsig_key: None,
            resolver: None,
            exec: None,
            propagation_timeout: Duration::from_secs(120),
            step_timeout: Duration::from_secs(30),
            ttl: 60,
        }
    }
}

impl DnsSettings {
    /// Whether any DNS-01 setting is given.
    pub fn any(&self) -> bool {
        self.update.is_some()
            || self.tsig_key.is_some()
            || self.resolver.is_some()
            || self.exec.is_some()
    }
}

/// A DNS server address as given: `IP`, `IP:PORT` or `[IPv6]:PORT` (port 53 when none).
pub fn dns_server(s: &str) -> Result<SocketAddr, AcmeError> {
    if let Ok(a) = s.parse::<SocketAddr>() {
        return Ok(a);
    }
    let ip = s
        .strip_prefix('[')
        .and_then(|r| r.strip_suffix(']'))
        .unwrap_or(s);
    ip.parse::<std::net::IpAddr>()
        .map(|ip| SocketAddr::new(ip, 53))
        .map_err(|_| {
            AcmeError::Config(format!(
                "{}: not a DNS server address (IP, IP:PORT or [IPv6]:PORT)",
                clean(s)
            ))
        })
}

impl AcmeSettings {
    /// DNS-01's settings agree with the challenge and the names: wildcards only with
    /// DNS-01, DNS-01 with exactly one writer, a TSIG key only with an update server.
    fn check_dns(&self) -> Result<(), AcmeError> {
        let d = &self.dns;
        if self.challenge != ChallengeKind::Dns01 {
            if let Some(w) = self.domains.iter().find(|d| d.starts_with("*.")) {
                return Err(AcmeError::Config(format!(
                    "{}: a wildcard name needs --acme-challenge dns-01 (the CA validates \
                     wildcards only through DNS)",
                    clean(w)
                )));
            }
            if d.any() {
                return Err(AcmeError::Config(
                    "--acme-dns-update, --acme-dns-tsig-key, --acme-dns-resolver and \
                     --acme-dns-exec need --acme-challenge dns-01"
                        .into(),
                ));
            }
            return Ok(());
        }
        match (&d.update, &d.exec) {
            (None, None) => Err(AcmeError::Config(
                "dns-01 needs --acme-dns-update ADDR (RFC 2136, with --acme-dns-tsig-key FILE) \
                 or --acme-dns-exec PROGRAM"
                    .into(),
            )),
            (Some(_), Some(_)) => Err(AcmeError::Config(
                "--acme-dns-update and --acme-dns-exec exclude each other".into(),
            )),
            (None, Some(_)) if d.tsig_key.is_some() => Err(AcmeError::Config(
                "--acme-dns-tsig-key needs --acme-dns-update ADDR".into(),
            )),
            _ => Ok(()),
        }
    }
}

/// A domain name as ACME wants it: A-labels by UTS #46 (`tlskit_verify::names`, the
/// one place names are converted), lower case, no trailing dot; a leading `*.` kept.
pub fn domain(input: &str) -> Result<String, AcmeError> {
    tlskit_verify::names::DnsName::parse(input)
        .map(|d| d.ascii().to_string())
        .map_err(|e| AcmeError::Config(clean(&e.to_string())))
}

/// Whether `name` is one of `names`, or one label under one of its `*.` wildcards (ASCII
/// case ignored): the one test of "a name this server manages" for serving and for
/// fetching challenge answers.
pub(crate) fn covers(names: &[String], name: &str) -> bool {
    names.iter().any(|m| match m.strip_prefix("*.") {
        Some(parent) => name
            .split_once('.')
            .is_some_and(|(_, p)| p.eq_ignore_ascii_case(parent)),
        None => m.eq_ignore_ascii_case(name),
    })
}

/// Validity and names of a leaf certificate.
#[derive(Debug, Clone)]
pub(crate) struct LeafInfo {
    pub(crate) not_before: SystemTime,
    pub(crate) not_after: SystemTime,
    /// Hex of the serial INTEGER's content, DER sign byte included (the `--json`
    /// documents' form); logs print it through `tlskit_x509::text::serial_from_hex`.
    pub(crate) serial: String,
    pub(crate) names: Vec<String>,
}

pub(crate) fn leaf_info(der: &[u8]) -> Option<LeafInfo> {
    use x509_parser::extensions::GeneralName;
    let (_, c) = x509_parser::parse_x509_certificate(der).ok()?;
    let v = c.validity();
    // Before 1970 reads as 1970; X.509 times end in 9999, well inside SystemTime, and
    // anything past it would read as 1970 too (expired: refused, never trusted longer).
    let t = |ts: i64| {
        u64::try_from(ts)
            .ok()
            .and_then(|s| UNIX_EPOCH.checked_add(Duration::from_secs(s)))
            .unwrap_or(UNIX_EPOCH)
    };
    let mut names = Vec::new();
    if let Ok(Some(san)) = c.subject_alternative_name() {
        for n in &san.value.general_names {
            if let GeneralName::DNSName(d) = n {
                names.push(d.to_ascii_lowercase());
            }
        }
    }
    Some(LeafInfo {
        not_before: t(v.not_before.timestamp()),
        not_after: t(v.not_after.timestamp()),
        serial: c.tbs_certificate.raw_serial_as_string().replace(':', ""),
        names,
    })
}

pub(crate) fn unix(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Why a chain and key (PEM) are not a pair that can be served.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PairError {
    /// The chain is not PEM. Said in words and not chained as a source: the PEM error's
    /// own text may quote the input.
    #[error("bad certificate PEM: {}", tlskit_x509::text::pem_error_reason(.0))]
    ChainPem(rustls_pki_types::pem::Error),
    /// The chain holds no certificate.
    #[error("no certificate")]
    NoCertificate,
    /// The key is not a PEM private key. Said in words and not chained: the PEM error's
    /// own text may quote the key file.
    #[error("no usable private key: {}", tlskit_x509::text::pem_error_reason(.0))]
    KeyPem(rustls_pki_types::pem::Error),
    /// The provider cannot sign with the key.
    #[error("unsupported private key: {0}")]
    Unsupported(#[source] rustls::Error),
    /// The key is not the certificate's.
    #[error("key does not match the certificate: {0}")]
    Mismatch(#[source] rustls::Error),
}

/// A chain (PEM) and key (PEM) as a rustls certified key, checked to belong together.
pub(crate) fn certified(
    chain_pem: &str,
    key_pem: &str,
    provider: &rustls::crypto::CryptoProvider,
) -> Result<Arc<CertifiedKey>, PairError> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(chain_pem.as_bytes())
        .collect::<Result<_, _>>()
        .map_err(PairError::ChainPem)?;
    if chain.is_empty() {
        return Err(PairError::NoCertificate);
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).map_err(PairError::KeyPem)?;
    let signing = provider
        .key_provider
        .load_private_key(key)
        .map_err(PairError::Unsupported)?;
    let ck = CertifiedKey::new(chain, signing);
    ck.keys_match().map_err(PairError::Mismatch)?;
    Ok(Arc::new(ck))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A self-signed certificate for `name` (PEM) and its key (PEM).
    fn pair(name: &str) -> (String, String) {
        let key = rcgen::KeyPair::generate().unwrap_or_else(|e| panic!("{e}"));
        let cert = rcgen::CertificateParams::new(vec![name.to_string()])
            .and_then(|p| p.self_signed(&key))
            .unwrap_or_else(|e| panic!("{e}"));
        (cert.pem(), key.serialize_pem())
    }

    #[test]
    fn a_pair_that_cannot_be_served_says_why() {
        let provider = rustls::crypto::aws_lc_rs::default_provider();
        let (chain, key) = pair("a.test");
        assert!(certified(&chain, &key, &provider).is_ok());

        let e = certified("", &key, &provider).err();
        assert!(matches!(e, Some(PairError::NoCertificate)), "{e:?}");
        assert_eq!(e.map(|e| e.to_string()).as_deref(), Some("no certificate"));

        let e = certified(&chain, "not a key", &provider).err();
        assert!(matches!(e, Some(PairError::KeyPem(_))), "{e:?}");
        let text = e.map(|e| e.to_string()).unwrap_or_default();
        assert!(text.starts_with("no usable private key: "), "{text}");

        // Another pair's key: refused, with rustls's error kept as the source.
        let (_, other) = pair("a.test");
        let e = certified(&chain, &other, &provider).err();
        assert!(matches!(e, Some(PairError::Mismatch(_))), "{e:?}");
        let source = e
            .as_ref()
            .and_then(std::error::Error::source)
            .and_then(|s| s.downcast_ref::<rustls::Error>());
        assert!(source.is_some(), "{e:?}");
        let text = e.map(|e| e.to_string()).unwrap_or_default();
        assert!(
            text.starts_with("key does not match the certificate: "),
            "{text}"
        );
    }

    #[test]
    fn covers_exact_names_and_one_label_under_a_wildcard() {
        let names = [
            "www.example.test".to_string(),
            "*.api.example.test".to_string(),
        ];
        assert!(covers(&names, "www.example.test"));
        assert!(covers(&names, "WWW.Example.TEST"));
        assert!(covers(&names, "v1.api.example.test"));
        assert!(!covers(&names, "api.example.test"));
        assert!(!covers(&names, "a.v1.api.example.test"));
        assert!(!covers(&names, "example.test"));
        assert!(!covers(&[], "www.example.test"));
    }

    #[test]
    fn clean_escapes_controls_and_bounds_length() {
        assert_eq!(clean("a\x1b[2Jb\x07"), "a\\x1b[2Jb\\x07");
        assert!(clean(&"x".repeat(5000)).chars().count() <= 1001);
    }

    #[test]
    fn settings_check_names() {
        let mut s = AcmeSettings::new(
            "https://ca.test/dir".into(),
            vec!["a.test".into(), "*.b.test".into()],
            PathBuf::from("/tmp/x"),
        );
        s.challenge = ChallengeKind::Dns01;
        s.dns.exec = Some(PathBuf::from("/bin/true"));
        assert!(s.check().is_ok());
        s.domains.push("bad name".into());
        assert!(s.check().is_err());
        s.domains.pop();
        assert_eq!(
            domain("Bücher.Test.").ok().as_deref(),
            Some("xn--bcher-kva.test")
        );
        assert!(domain("a\u{2024}test").is_err());
        s.domains.push("Bücher.test".into());
        assert!(s.check().is_err());
        s.domains.pop();
        s.directory = "http://ca.test/dir".into();
        assert!(s.check().is_err());
    }
}
