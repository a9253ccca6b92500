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
    /// External account binding (RFC 8555 7.3.4), for a CA that requires it when the
    /// account is created.
    pub eab: Option<Eab>,
}

/// Largest EAB HMAC key file read (a key is a few dozen characters).
const MAX_EAB_FILE: u64 = 4096;

/// An external account binding (RFC 8555 7.3.4): the key ID and the HMAC key a CA that
/// requires one (ZeroSSL, Google, a private CA) hands out, binding a new ACME account to
/// an account at the CA. The HMAC key is a secret: `Debug` shows the key ID only, and
/// nothing here puts the key or any part of it in a message.
#[derive(Clone)]
pub struct Eab {
    kid: String,
    hmac: Vec<u8>,
}

impl std::fmt::Debug for Eab {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Eab")
            .field("kid", &self.kid)
            .field("hmac_key", &tlskit_io::redact::MASK)
            .finish()
    }
}

impl Eab {
    /// The key ID `kid` with the HMAC key `hmac_key` (raw bytes, at least 16).
    pub fn new(kid: &str, hmac_key: Vec<u8>) -> Result<Self, AcmeError> {
        if kid.is_empty() || kid.len() > 256 || kid.chars().any(char::is_control) {
            return Err(AcmeError::Config(
                "the external account key ID must be 1 to 256 printable characters".into(),
            ));
        }
        if hmac_key.len() < 16 {
            return Err(AcmeError::Config(
                "the external account HMAC key is shorter than 16 bytes".into(),
            ));
        }
        Ok(Self {
            kid: kid.to_string(),
            hmac: hmac_key,
        })
    }

    /// The key ID `kid` with the HMAC key in `path`: base64url as the CA gives it (padding
    /// and surrounding white space allowed), read bounded (4 KiB, regular files only).
    /// Errors name the file, never its content.
    pub fn from_file(kid: &str, path: &std::path::Path) -> Result<Self, AcmeError> {
        use base64::Engine;
        let bad = |reason: &str| AcmeError::File {
            path: path.to_path_buf(),
            reason: reason.to_string(),
        };
        let bytes = tlskit_io::read(path, MAX_EAB_FILE).map_err(|e| AcmeError::File {
            path: path.to_path_buf(),
            reason: e.kind.to_string(),
        })?;
        let text = std::str::from_utf8(&bytes)
            .map_err(|_| bad("the HMAC key file is not text (base64url expected)"))?;
        let text = text.trim().trim_end_matches('=');
        let key = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(text)
            .map_err(|_| bad("the HMAC key is not base64url (as the CA gives it)"))?;
        Self::new(kid, key).map_err(|e| match e {
            AcmeError::Config(r) => bad(&r),
            other => other,
        })
    }

    /// The key ID.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// The key as instant-acme signs the binding with it.
    pub(crate) fn key(&self) -> instant_acme::ExternalAccountKey {
        instant_acme::ExternalAccountKey::new(self.kid.clone(), &self.hmac)
    }
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
            eab: None,
        }
    }

    /// Check names and URL: lower-case DNS names (a leading `*.` allowed) or IP addresses
    /// in their canonical form, an https URL.
    pub fn check(&self) -> Result<(), AcmeError> {
        if self.domains.is_empty() {
            return Err(AcmeError::Config(
                "no domain name to get a certificate for".into(),
            ));
        }
        for d in &self.domains {
            if let Some(ip) = ip_identifier(d) {
                if ip.to_string() != *d {
                    return Err(AcmeError::Config(format!(
                        "{}: an IP address must be written in its canonical form ({ip})",
                        clean(d)
                    )));
                }
                continue;
            }
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
    let bad = |why: &str| AcmeError::Config(format!("{}: {why}", clean(s)));
    let addr = match s.parse::<SocketAddr>() {
        Ok(a) => a,
        Err(_) => {
            let ip = s
                .strip_prefix('[')
                .and_then(|r| r.strip_suffix(']'))
                .unwrap_or(s);
            ip.parse::<std::net::IpAddr>()
                .map(|ip| SocketAddr::new(ip, 53))
                .map_err(|_| bad("not a DNS server address (IP, IP:PORT or [IPv6]:PORT)"))?
        }
    };
    // Neither can be sent a question: refused here, not as an OS error at the first order.
    if addr.port() == 0 {
        return Err(bad("port 0 is not a DNS server's port"));
    }
    if addr.ip().is_unspecified() {
        return Err(bad(
            "an unspecified address (0.0.0.0, ::) names no DNS server",
        ));
    }
    Ok(addr)
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
        // RFC 8738 section 7: an IP address is never validated through DNS.
        if let Some(ip) = self.domains.iter().find(|d| ip_identifier(d).is_some()) {
            return Err(AcmeError::Config(format!(
                "{}: an IP address cannot be validated with dns-01 (RFC 8738): use \
                 http-01 or tls-alpn-01",
                clean(ip)
            )));
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
/// one place names are converted), lower case, no trailing dot; a leading `*.` kept. An
/// IP address literal (`192.0.2.1`, `2001:db8::1`, `[2001:db8::1]`) is an `ip`
/// identifier (RFC 8738), returned in its canonical form.
pub fn domain(input: &str) -> Result<String, AcmeError> {
    if let Some(ip) = ip_identifier(input) {
        return Ok(ip.to_string());
    }
    tlskit_verify::names::DnsName::parse(input)
        .map(|d| d.ascii().to_string())
        .map_err(|e| AcmeError::Config(clean(&e.to_string())))
}

/// The IP address `name` writes (RFC 8738 `ip` identifier), brackets around an IPv6
/// address allowed; `None` for a DNS name.
pub(crate) fn ip_identifier(name: &str) -> Option<std::net::IpAddr> {
    let bare = name
        .strip_prefix('[')
        .and_then(|n| n.strip_suffix(']'))
        .unwrap_or(name);
    bare.parse().ok()
}

/// The IP address a TLS-ALPN-01 validation names in its SNI (RFC 8738 section 6: the
/// reverse-DNS name, `1.0.0.127.in-addr.arpa` for 127.0.0.1, the nibbles of an IPv6
/// address under `ip6.arpa`); `None` for any other name.
pub(crate) fn reverse_ip(sni: &str) -> Option<std::net::IpAddr> {
    let sni = sni.strip_suffix('.').unwrap_or(sni).to_ascii_lowercase();
    if let Some(v4) = sni.strip_suffix(".in-addr.arpa") {
        let mut octets = [0u8; 4];
        let labels: Vec<&str> = v4.split('.').collect();
        if labels.len() != 4 {
            return None;
        }
        for (i, l) in labels.iter().rev().enumerate() {
            // Decimal octets without leading zeros, as the reverse name writes them.
            if l.is_empty() || l.len() > 3 || (l.len() > 1 && l.starts_with('0')) {
                return None;
            }
            octets[i] = l.parse().ok()?;
        }
        return Some(std::net::IpAddr::from(octets));
    }
    let v6 = sni.strip_suffix(".ip6.arpa")?;
    let nibbles: Vec<&str> = v6.split('.').collect();
    if nibbles.len() != 32 {
        return None;
    }
    let mut bytes = [0u8; 16];
    for (i, n) in nibbles.iter().rev().enumerate() {
        let [c] = n.as_bytes() else { return None };
        let v = (*c as char).to_digit(16)? as u8;
        bytes[i / 2] |= if i % 2 == 0 { v << 4 } else { v };
    }
    Some(std::net::IpAddr::from(bytes))
}

/// The identifier a TLS-ALPN-01 validation's SNI stands for: the IP address of a
/// reverse-DNS name, else the name itself.
pub(crate) fn sni_identifier(sni: &str) -> String {
    reverse_ip(sni).map_or_else(|| sni.to_string(), |ip| ip.to_string())
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
            match n {
                GeneralName::DNSName(d) => names.push(d.to_ascii_lowercase()),
                // An IP address SAN in the canonical text form ACME orders it in; an
                // octet string of another length is kept as hex (matches no order).
                GeneralName::IPAddress(b) => names.push(match <[u8; 4]>::try_from(*b) {
                    Ok(v4) => std::net::IpAddr::from(v4).to_string(),
                    Err(_) => match <[u8; 16]>::try_from(*b) {
                        Ok(v6) => std::net::IpAddr::from(v6).to_string(),
                        Err(_) => b.iter().map(|x| format!("{x:02x}")).collect(),
                    },
                }),
                _ => {}
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

    /// The EAB HMAC key file: base64url (padding and white space allowed), at least 16
    /// bytes; refusals name the file and never quote it; `Debug` hides the key.
    #[test]
    fn eab_key_file_is_read_bounded_and_never_shown() {
        let t = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let file = |name: &str, body: &str| {
            let p = t.path().join(name);
            std::fs::write(&p, body).unwrap_or_else(|e| panic!("{e}"));
            p
        };
        let key = "zWNDZM6eQGHWpSRTPal5eIUYFTu7EajVIoguysqZ9wG44nMEtx3MUAsUDkMTQ12W";
        let eab = Eab::from_file("kid-1", &file("k", &format!("  {key}==\n")))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(eab.kid(), "kid-1");
        assert_eq!(eab.hmac.len(), 48);
        let debug = format!("{eab:?}");
        assert!(debug.contains("kid-1") && debug.contains("***"), "{debug}");
        assert!(!debug.contains("zWND") && !debug.contains("205"), "{debug}");
        for (name, body, why) in [
            ("bad", "secret*value*not*base64", "not base64url"),
            ("short", "c2hvcnQ", "shorter than 16 bytes"),
            ("bin", "\u{0}\u{ff}", "not base64url"),
        ] {
            let e = Eab::from_file("kid-1", &file(name, body))
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(e.contains(why) && e.contains(name), "{name}: {e}");
            assert!(!e.contains("secret") && !e.contains("c2hvcnQ"), "{e}");
        }
        // Bounded: a large file is refused, not read whole.
        let e = Eab::from_file("kid-1", &file("big", &"A".repeat(10_000)))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("big") && !e.contains("AAAA"), "{e}");
        assert!(Eab::from_file("kid-1", &t.path().join("missing")).is_err());
        assert!(Eab::new("", vec![0; 32]).is_err());
        assert!(Eab::new("a\nb", vec![0; 32]).is_err());
    }

    /// IP literals are `ip` identifiers (RFC 8738) in canonical form; the reverse-DNS name
    /// of a TLS-ALPN-01 validation's SNI maps back to the address; an IP SAN reads as
    /// the address.
    #[test]
    fn ip_identifiers_and_their_reverse_names() {
        assert_eq!(domain("127.0.0.1").ok().as_deref(), Some("127.0.0.1"));
        assert_eq!(domain("[2001:DB8::1]").ok().as_deref(), Some("2001:db8::1"));
        assert_eq!(domain("2001:db8:0::1").ok().as_deref(), Some("2001:db8::1"));
        let mut s = AcmeSettings::new(
            "https://ca.test/dir".into(),
            vec!["127.0.0.1".into(), "2001:db8::1".into(), "a.test".into()],
            PathBuf::from("/tmp/x"),
        );
        assert!(s.check().is_ok());
        s.domains.push("2001:DB8::2".into());
        assert!(s.check().is_err(), "not canonical");
        let v4 = std::net::IpAddr::from([127, 0, 0, 1]);
        assert_eq!(reverse_ip("1.0.0.127.in-addr.arpa"), Some(v4));
        assert_eq!(reverse_ip("1.0.0.127.IN-ADDR.ARPA."), Some(v4));
        for bad in [
            "0.0.127.in-addr.arpa",
            "1.0.0.0.127.in-addr.arpa",
            "256.0.0.127.in-addr.arpa",
            "01.0.0.127.in-addr.arpa",
            "a.0.0.127.in-addr.arpa",
            "in-addr.arpa",
            "srv.test",
            "1.0.0.127.in-addr.arpa.example",
        ] {
            assert_eq!(reverse_ip(bad), None, "{bad}");
        }
        let v6: std::net::IpAddr = "2001:db8::567:89ab"
            .parse()
            .unwrap_or_else(|e| panic!("{e}"));
        let rev = "b.a.9.8.7.6.5.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa";
        assert_eq!(reverse_ip(rev), Some(v6));
        assert_eq!(reverse_ip(&rev[2..]), None, "31 nibbles");
        assert_eq!(sni_identifier("1.0.0.127.in-addr.arpa"), "127.0.0.1");
        assert_eq!(sni_identifier("srv.test"), "srv.test");
        // An IP SAN reads back as the address ordered.
        let key = rcgen::KeyPair::generate().unwrap_or_else(|e| panic!("{e}"));
        let cert = rcgen::CertificateParams::new(vec!["127.0.0.1".into(), "::1".into()])
            .and_then(|p| p.self_signed(&key))
            .unwrap_or_else(|e| panic!("{e}"));
        let info = leaf_info(cert.der()).unwrap_or_else(|| panic!("parses"));
        assert_eq!(info.names, ["127.0.0.1", "::1"]);
        assert!(covers(&info.names, "127.0.0.1"));
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
