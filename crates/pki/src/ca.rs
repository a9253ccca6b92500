//! A small file-based certificate authority.
//!
//! A CA directory holds `ca.key` (0600), `ca.pem` (the CA certificate), `chain.pem`
//! (for an intermediate: the certificates above it, root excluded), `serial` (the last
//! serial issued), `index.jsonl` (one JSON line per issued certificate, append-only) and
//! `lock`. A CA whose key is on a PKCS#11 token has `ca.pkcs11` (the key's URI, never a
//! PIN) instead of `ca.key`; `crl-url` (optional) is the CRL distribution point put into
//! what it issues, and `crlnumber` the number of the last CRL written. `issue` holds an
//! exclusive lock on `lock` while it picks a serial, signs and appends to the index;
//! serials are random 128-bit values checked against the index under that lock, so two
//! concurrent issues never share one. A caller that finds the lock held is told
//! (`IssueOptions::on_lock_wait`) and waits at most [`LOCK_WAIT`].
//!
//! Revocation (`revoke`, [`Ca::revoke`]) appends a revocation record to the same index
//! under the same lock, and [`Ca::crl`] / [`Ca::write_crl`] sign a CRL of every
//! revocation (the `revocation` module below).

use std::collections::HashSet;
use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use rcgen::{
    CertificateParams, GeneralSubtree, Issuer, KeyPair, NameConstraints, SanType, SerialNumber,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use x509_parser::prelude::*;

use crate::constraints::{Constraints, Name};
use crate::key::{self, KeyType};
use crate::{cert, dn, fsx, san, PkiError, Result};

const KEY: &str = "ca.key";
const TOKEN_KEY: &str = "ca.pkcs11";
const CERT: &str = "ca.pem";
const CHAIN: &str = "chain.pem";
const SERIAL: &str = "serial";
const INDEX: &str = "index.jsonl";
const LOCK: &str = "lock";
/// The CA's default CRL distribution point (`ca init --crl-url`): one URL on one line.
pub const CRL_URL: &str = "crl-url";

/// Longest CRL distribution point URL accepted.
pub const MAX_CRL_URL: usize = 2048;

/// Why a CRL distribution point URL was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CrlUrlError {
    /// Not `http://` or `https://` (RFC 5280 4.2.1.13: relying parties fetch over HTTP;
    /// an https URL is allowed, though clients may refuse to fetch one).
    #[error("a CRL URL starts with http:// or https://")]
    Scheme,
    /// No host after the scheme.
    #[error("the CRL URL has no host")]
    NoHost,
    /// A control character, a space or a non-ASCII character (an IA5String URI holds
    /// none; percent-encode them).
    #[error("the CRL URL contains {0} (percent-encode it)")]
    Character(String),
    /// Longer than [`MAX_CRL_URL`].
    #[error("the CRL URL is longer than {MAX_CRL_URL} characters")]
    TooLong,
}

/// Check a CRL distribution point URL: `http://` or `https://` (any case), a host, at
/// most [`MAX_CRL_URL`] characters, printable ASCII without spaces.
pub fn check_crl_url(url: &str) -> std::result::Result<(), CrlUrlError> {
    if url.len() > MAX_CRL_URL {
        return Err(CrlUrlError::TooLong);
    }
    if let Some(c) = url.chars().find(|c| !c.is_ascii_graphic()) {
        return Err(CrlUrlError::Character(if c == ' ' {
            "a space".into()
        } else {
            format!("the character U+{:04X}", u32::from(c))
        }));
    }
    let lower = url.to_ascii_lowercase();
    let rest = lower
        .strip_prefix("http://")
        .or_else(|| lower.strip_prefix("https://"))
        .ok_or(CrlUrlError::Scheme)?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = authority.rsplit('@').next().unwrap_or("");
    if host.is_empty() || host.starts_with(':') {
        return Err(CrlUrlError::NoHost);
    }
    Ok(())
}

mod revocation;

pub use revocation::{
    parse_serial, revocations, revoke, revoke_certificate, Crl, CrlSummary, RevokedEntry,
    CRL_NUMBER, MAX_NEXT_UPDATE,
};
pub use tlskit_x509::RevocationReason;

/// Longest wait for another process's lock on a CA directory. Signing under the lock
/// takes milliseconds; a lock held this long belongs to a stuck process.
pub const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// Take the exclusive lock on `lock_path`; when another process holds it, call
/// `on_wait` once and poll until it is free, for at most [`LOCK_WAIT`].
fn lock_ca(lock_path: &Path, on_wait: Option<fn(&Path)>) -> Result<File> {
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(lock_path)
        .map_err(|e| PkiError::io(lock_path, e))?;
    let start = std::time::Instant::now();
    let mut told = false;
    loop {
        match lock.try_lock() {
            Ok(()) => return Ok(lock),
            Err(std::fs::TryLockError::WouldBlock) => {}
            Err(std::fs::TryLockError::Error(e)) => return Err(PkiError::io(lock_path, e)),
        }
        if !told {
            told = true;
            if let Some(f) = on_wait {
                f(lock_path);
            }
        }
        if start.elapsed() >= LOCK_WAIT {
            return Err(PkiError::bad(
                lock_path,
                format!(
                    "another process has held this CA's lock for {} s (a stuck `tlskit ca \
                     issue`?); nothing was issued",
                    LOCK_WAIT.as_secs()
                ),
            ));
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Options of `ca init`.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct InitOptions {
    /// Subject DN; a default naming tlskit and a random tag when `None`.
    pub subject: Option<String>,
    /// Key type of the CA key.
    pub key_type: KeyType,
    /// pathLenConstraint of basicConstraints.
    pub path_len: Option<u8>,
    /// Permitted DNS subtrees (name constraints).
    pub permit_dns: Vec<String>,
    /// Validity in days.
    pub days: u32,
    /// Make an intermediate issued by the CA in this directory instead of a root.
    pub parent: Option<PathBuf>,
    /// As `IssueOptions::on_lock_wait`, for the parent CA's lock.
    pub on_lock_wait: Option<fn(&Path)>,
    /// Use this existing key on a PKCS#11 token (a `pkcs11:` URI) instead of generating a
    /// key file; the CA directory then stores the URI (without any PIN) in `ca.pkcs11`.
    pub token_key: Option<String>,
    /// The CRL distribution point every certificate this CA issues carries (unless
    /// `IssueOptions::crl_url` names another), kept in `DIR/crl-url`.
    pub crl_url: Option<String>,
}

impl InitOptions {
    /// Options with the defaults: a generated subject, a P-256 key, no path length, no
    /// name constraints, a root CA, and a validity of 0 days (set it with [`Self::days`]).
    pub fn new() -> Self {
        Self::default()
    }
    /// The subject DN (`None`: a default naming tlskit and a random tag).
    pub fn subject(mut self, subject: Option<String>) -> Self {
        self.subject = subject;
        self
    }
    /// The key type of the CA key.
    pub fn key_type(mut self, key_type: KeyType) -> Self {
        self.key_type = key_type;
        self
    }
    /// The pathLenConstraint of basicConstraints.
    pub fn path_len(mut self, path_len: Option<u8>) -> Self {
        self.path_len = path_len;
        self
    }
    /// Permitted DNS subtrees (name constraints).
    pub fn permit_dns(mut self, permit_dns: Vec<String>) -> Self {
        self.permit_dns = permit_dns;
        self
    }
    /// Validity in days.
    pub fn days(mut self, days: u32) -> Self {
        self.days = days;
        self
    }
    /// Make an intermediate issued by the CA in this directory (`None`: a root).
    pub fn parent(mut self, parent: Option<PathBuf>) -> Self {
        self.parent = parent;
        self
    }
    /// Called once with the parent CA's lock file when another process holds it.
    pub fn on_lock_wait(mut self, on_lock_wait: Option<fn(&Path)>) -> Self {
        self.on_lock_wait = on_lock_wait;
        self
    }
    /// Use this existing key on a PKCS#11 token (a `pkcs11:` URI) instead of a key file.
    pub fn token_key(mut self, token_key: Option<String>) -> Self {
        self.token_key = token_key;
        self
    }
    /// The default CRL distribution point of the certificates this CA issues.
    pub fn crl_url(mut self, crl_url: Option<String>) -> Self {
        self.crl_url = crl_url;
        self
    }
}

/// Certificate profiles of `ca issue`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Profile {
    /// TLS server: digitalSignature (+keyEncipherment for RSA), EKU serverAuth.
    #[default]
    Server,
    /// TLS client: digitalSignature (+keyEncipherment for RSA), EKU clientAuth.
    Client,
    /// A subordinate CA: CA:TRUE, pathlen 0, keyCertSign and cRLSign.
    Intermediate,
}

impl Profile {
    /// Default validity in days.
    pub fn default_days(self) -> u32 {
        match self {
            Profile::Server | Profile::Client => 90,
            Profile::Intermediate => 1825,
        }
    }
}

impl std::str::FromStr for Profile {
    type Err = UnknownProfile;
    fn from_str(s: &str) -> Result<Self, UnknownProfile> {
        match s {
            "server" => Ok(Profile::Server),
            "client" => Ok(Profile::Client),
            "intermediate" => Ok(Profile::Intermediate),
            _ => Err(UnknownProfile {
                input: s.to_string(),
            }),
        }
    }
}

/// A profile name that [`Profile`] does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown profile {input:?} (one of: server, client, intermediate)")]
pub struct UnknownProfile {
    /// The name as given.
    pub input: String,
}

/// One line of `index.jsonl`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IndexEntry {
    /// Serial number, lower-case hex.
    pub serial: String,
    /// Subject DN (RFC 4514).
    pub subject: String,
    /// SANs as `dns:NAME`, `ip:ADDR`, `email:ADDR`.
    pub sans: Vec<String>,
    /// Profile used.
    pub profile: String,
    /// Start of validity (RFC 3339).
    pub not_before: String,
    /// End of validity (RFC 3339).
    pub not_after: String,
    /// SHA-256 of the certificate DER, hex.
    pub sha256: String,
    /// When it was issued (RFC 3339).
    pub issued_at: String,
    /// When it was revoked (RFC 3339), filled in by [`index`] from the index's revocation
    /// records; never written on the issuance line itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<String>,
    /// Why it was revoked, with [`Self::revoked_at`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revocation_reason: Option<RevocationReason>,
}

/// One line of `index.jsonl`: an issuance or (since revocation) a revocation record.
/// The revocation record is tried first: it has a `revoke` field no issuance has.
#[derive(Deserialize)]
#[serde(untagged)]
enum IndexLine {
    Revoke(revocation::RevokeRecord),
    Issue(IndexEntry),
}

/// Call `f` with each non-empty line of the index at `path` (1-based line number), read
/// through a bounded, regular-file-only reader; a missing index has no lines.
fn index_lines(path: &Path, mut f: impl FnMut(usize, IndexLine) -> Result<()>) -> Result<()> {
    // Opened non-blocking and checked to be a regular file (a FIFO here would hang the
    // CA); read line by line, at most MAX_INDEX_BYTES.
    let file = match tlskit_io::open_regular(path) {
        Ok((file, _)) => file,
        Err(tlskit_io::ReadError {
            kind: tlskit_io::ReadErrorKind::Io(e),
            ..
        }) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    let mut reader = BufReader::new(file.take(MAX_INDEX_BYTES));
    let mut buf = Vec::new();
    let mut n = 0;
    loop {
        buf.clear();
        let read = reader
            .read_until(b'\n', &mut buf)
            .map_err(|e| PkiError::io(path, e))?;
        if read == 0 {
            break;
        }
        n += 1;
        // A last line without its newline is an append that a crash cut short: the
        // certificate it records was never handed out. It is skipped here, and cut off
        // by the next append (append_index_line).
        let complete = buf.last() == Some(&b'\n');
        let line = match std::str::from_utf8(&buf) {
            Ok(line) => line,
            Err(_) if !complete => break,
            Err(_) => return Err(PkiError::bad(path, format!("line {n} is not UTF-8 text"))),
        };
        if line.trim().is_empty() {
            continue;
        }
        let parsed = match serde_json::from_str::<IndexLine>(line) {
            Ok(l) => l,
            Err(_) if !complete => break,
            // serde's untagged error says only "did not match any variant": parse again
            // as the common kind of line for a precise reason.
            Err(_) => IndexLine::Issue(
                serde_json::from_str::<IndexEntry>(line)
                    .map_err(PkiError::parse(path, format!("line {n}")))?,
            ),
        };
        f(n, parsed)?;
    }
    Ok(())
}

/// Append one JSON line to the index and fsync it (under the caller's lock). A torn last
/// line (an append a crash cut short, which readers skip) is cut off first, so the new
/// line never continues it.
fn append_index_line(index_path: &Path, value: &impl Serialize) -> Result<()> {
    let mut line =
        serde_json::to_string(value).map_err(PkiError::failed("encoding the index entry"))?;
    line.push('\n');
    let io = |e| PkiError::io(index_path, e);
    let mut idx = OpenOptions::new()
        .create(true)
        .read(true)
        .write(true)
        .truncate(false)
        .open(index_path)
        .map_err(io)?;
    let len = idx.metadata().map_err(io)?.len();
    let keep = complete_prefix_len(&mut idx, len).map_err(io)?;
    if keep != len {
        idx.set_len(keep).map_err(io)?;
    }
    idx.seek(SeekFrom::Start(keep))
        .and_then(|_| idx.write_all(line.as_bytes()))
        .and_then(|()| idx.sync_all())
        .map_err(io)
}

/// The length of `file` up to and including its last newline (`len` when it ends in one
/// or is empty). Reads backwards from the end in 4 KiB steps: a torn line is short.
fn complete_prefix_len(file: &mut File, len: u64) -> std::io::Result<u64> {
    const STEP: u64 = 4096;
    let mut end = len;
    let mut buf = [0u8; STEP as usize];
    while end > 0 {
        let start = end.saturating_sub(STEP);
        // `end - start` is at most STEP, which fits the buffer.
        let chunk = &mut buf[..(end - start) as usize];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(chunk)?;
        if end == len && chunk.last() == Some(&b'\n') {
            return Ok(len);
        }
        if let Some(i) = chunk.iter().rposition(|&b| b == b'\n') {
            return Ok(start + i as u64 + 1);
        }
        end = start;
    }
    Ok(0)
}

/// Create a CA in `dir` (which must not exist or be empty). Returns the CA certificate PEM.
pub fn init(dir: &Path, opts: &InitOptions) -> Result<String> {
    if let Ok(mut rd) = fs::read_dir(dir) {
        if rd.next().is_some() {
            return Err(PkiError::bad(
                dir,
                "exists and is not empty; choose a new directory",
            ));
        }
    } else if dir.exists() {
        return Err(PkiError::bad(dir, "exists and is not a directory"));
    }
    let subject = match &opts.subject {
        Some(s) => s.clone(),
        None => {
            let tag = tlskit_x509::text::hex(&cert::random_serial()?[..4]);
            format!("CN=tlskit CA {tag},O=tlskit")
        }
    };
    let subject = dn::parse(&subject)?;
    if let Some(u) = &opts.crl_url {
        check_crl_url(u).map_err(|e| PkiError::Refused(format!("refusing: {e}")))?;
    }
    let mut permitted = Vec::new();
    for d in &opts.permit_dns {
        let trimmed = d.strip_prefix('.').unwrap_or(d);
        let name = tlskit_names::DnsName::parse(trimmed).map_err(PkiError::san_refused(d))?;
        if name.is_wildcard() {
            return Err(PkiError::San {
                input: d.clone(),
                reason: "a name constraint is a domain, not a wildcard (example.com covers every name below it)".into(),
            });
        }
        let base = if d.starts_with('.') {
            format!(".{}", name.ascii())
        } else {
            name.ascii().to_string()
        };
        permitted.push(GeneralSubtree::DnsName(base));
    }

    let (key, key_file) = match &opts.token_key {
        Some(uri) => {
            let k = key::open_token(uri, None)?;
            let stored = k.token_uri().map(|u| format!("{u}\n")).unwrap_or_default();
            (k, (TOKEN_KEY, stored, false))
        }
        None => {
            let key_der = key::generate(opts.key_type)?;
            let k = KeyPair::try_from(key_der.as_slice())
                .map_err(PkiError::rcgen("loading the new CA key"))?;
            let pem = key::pem_encode("PRIVATE KEY", &key_der);
            (key::SignKey::File(k), (KEY, pem, true))
        }
    };
    let mut p = CertificateParams::default();
    p.distinguished_name = subject;
    p.serial_number = Some(SerialNumber::from_slice(&cert::random_serial()?));
    (p.not_before, p.not_after) = cert::validity(opts.days)?;
    // An intermediate defaults to pathlen 0 (it issues leaves only).
    let path_len = match &opts.parent {
        Some(_) => Some(opts.path_len.unwrap_or(0)),
        None => opts.path_len,
    };
    cert::set_ca_usages(&mut p, path_len);
    if !permitted.is_empty() {
        p.name_constraints = Some(NameConstraints {
            permitted_subtrees: permitted,
            excluded_subtrees: Vec::new(),
        });
    }

    let (ca_pem, chain_pem) = match &opts.parent {
        None => (
            p.self_signed(&key)
                .map_err(PkiError::rcgen("signing the CA certificate"))
                .map_err(|e| key.explain(e))?
                .pem(),
            String::new(),
        ),
        Some(parent) => {
            let parent = Ca::open(parent)?;
            if let (Some(limit), Some(mine)) = (parent.path_len, path_len) {
                if u32::from(mine) >= limit {
                    return Err(PkiError::Refused(format!(
                        "refusing: the parent CA allows {limit} more CA level(s), so --path-len must be below {limit}"
                    )));
                }
            }
            let spki = rcgen::SubjectPublicKeyInfo::from_der(
                &rcgen::PublicKeyData::subject_public_key_info(&key),
            )
            .map_err(PkiError::rcgen("reading the new CA public key"))?;
            // The parent's CRL distribution point, as in what `issue` signs.
            if let Some(url) = &parent.crl_url {
                p.crl_distribution_points = vec![rcgen::CrlDistributionPoint {
                    uris: vec![url.clone()],
                }];
            }
            let issued = parent.sign_locked(p, &spki, Profile::Intermediate, opts.on_lock_wait)?;
            // Our chain: the parent certificate (unless it is the root) and its chain.
            let mut chain = String::new();
            if !parent.is_root {
                chain.push_str(&parent.cert_pem);
            }
            chain.push_str(&parent.chain_pem);
            (issued.pem, chain)
        }
    };

    create_dir_private(dir)?;
    let paths: Vec<PathBuf> = [key_file.0, CERT, CHAIN, SERIAL, INDEX]
        .iter()
        .map(|n| dir.join(n))
        .collect();
    let mut outputs = vec![
        fsx::Output {
            path: &paths[0],
            bytes: key_file.1.as_bytes(),
            private: key_file.2,
        },
        fsx::Output {
            path: &paths[1],
            bytes: ca_pem.as_bytes(),
            private: false,
        },
    ];
    if !chain_pem.is_empty() {
        outputs.push(fsx::Output {
            path: &paths[2],
            bytes: chain_pem.as_bytes(),
            private: false,
        });
    }
    outputs.push(fsx::Output {
        path: &paths[3],
        bytes: b"",
        private: false,
    });
    outputs.push(fsx::Output {
        path: &paths[4],
        bytes: b"",
        private: false,
    });
    let crl_url_path = dir.join(CRL_URL);
    let crl_url_line = opts.crl_url.as_ref().map(|u| format!("{u}\n"));
    if let Some(line) = &crl_url_line {
        outputs.push(fsx::Output {
            path: &crl_url_path,
            bytes: line.as_bytes(),
            private: false,
        });
    }
    fsx::write_all_or_nothing(&outputs, false)?;
    Ok(ca_pem)
}

fn create_dir_private(dir: &Path) -> Result<()> {
    let mut b = fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    b.create(dir).map_err(|e| PkiError::io(dir, e))?;
    // An existing empty directory is tightened as well: it will hold the CA key.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
            .map_err(|e| PkiError::io(dir, e))?;
    }
    Ok(())
}

/// An opened CA directory: its certificate, chain and signing key (a key file, or a
/// token key through `ca.pkcs11`), checked to belong together. Open it once and keep it
/// (a server does): each operation re-reads the index under the CA's lock, so several
/// handles and processes on one directory stay consistent.
pub struct Ca {
    dir: PathBuf,
    key: key::SignKey,
    cert_der: Vec<u8>,
    cert_pem: String,
    chain_pem: String,
    /// Name constraints of the CA and of every certificate in its chain.
    constraints: Vec<Constraints>,
    path_len: Option<u32>,
    is_root: bool,
    not_after: ::time::OffsetDateTime,
    /// The default CRL distribution point (`DIR/crl-url`).
    crl_url: Option<String>,
}

impl std::fmt::Debug for Ca {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ca")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl Ca {
    /// Open the CA in `dir`: reads `ca.pem`, `chain.pem` and the key (`ca.key`, or the
    /// token key named in `ca.pkcs11`), and checks that the key is the certificate's.
    pub fn open(dir: &Path) -> Result<Self> {
        let token = dir.join(TOKEN_KEY);
        let key_name = if token.exists() { TOKEN_KEY } else { KEY };
        if !dir.join(CERT).exists() || !dir.join(key_name).exists() {
            return Err(PkiError::bad(
                dir,
                format!("not a CA directory (no {CERT} / {KEY}); create one with `tlskit ca init`"),
            ));
        }
        let key = if token.exists() {
            let text = String::from_utf8(fsx::read(&token)?)
                .map_err(|_| PkiError::bad(&token, "not a pkcs11: URI"))?;
            key::open_token(text.trim(), None)?
        } else {
            key::SignKey::File(key::load(&dir.join(KEY))?)
        };
        let cert_path = dir.join(CERT);
        let cert_pem = String::from_utf8(fsx::read(&cert_path)?)
            .map_err(|_| PkiError::bad(&cert_path, "not a PEM file"))?;
        let cert_der = first_cert(&cert_path, cert_pem.as_bytes())?;
        let chain_path = dir.join(CHAIN);
        let chain_pem = if chain_path.exists() {
            String::from_utf8(fsx::read(&chain_path)?)
                .map_err(|_| PkiError::bad(&chain_path, "not a PEM file"))?
        } else {
            String::new()
        };
        let (_, x) = X509Certificate::from_der(&cert_der)
            .map_err(PkiError::parse(&cert_path, "not a certificate"))?;
        let bc = x
            .basic_constraints()
            .ok()
            .flatten()
            .map(|b| b.value.clone());
        if !bc.as_ref().is_some_and(|b| b.ca) {
            return Err(PkiError::bad(
                &cert_path,
                "is not a CA certificate (basicConstraints CA:FALSE or missing)",
            ));
        }
        if let Ok(Some(ku)) = x.key_usage() {
            if !ku.value.key_cert_sign() {
                return Err(PkiError::bad(
                    &cert_path,
                    "CA certificate lacks keyCertSign",
                ));
            }
        }
        let spki = rcgen::PublicKeyData::subject_public_key_info(&key);
        if spki != x.public_key().raw {
            return Err(PkiError::Mismatch(format!(
                "{}: the CA key does not match {}",
                dir.join(key_name).display(),
                cert_path.display()
            )));
        }
        let mut constraints: Vec<Constraints> = Constraints::of(&x).into_iter().collect();
        if let Some(Ok(blocks)) = key::pem_blocks(chain_pem.as_bytes()) {
            for (_, der) in blocks {
                if let Ok((_, c)) = X509Certificate::from_der(&der) {
                    constraints.extend(Constraints::of(&c));
                }
            }
        }
        let path_len = bc.and_then(|b| b.path_len_constraint);
        let is_root = x.subject().as_raw() == x.issuer().as_raw();
        let not_after = x.validity().not_after.to_datetime();
        let url_path = dir.join(CRL_URL);
        let crl_url = if url_path.exists() {
            let text = tlskit_io::read_to_string(&url_path, MAX_CRL_URL as u64 + 2)?;
            let url = text.trim().to_string();
            check_crl_url(&url).map_err(|e| PkiError::content(&url_path, e))?;
            Some(url)
        } else {
            None
        };
        Ok(Ca {
            crl_url,
            dir: dir.to_path_buf(),
            key,
            cert_der,
            cert_pem,
            chain_pem,
            constraints,
            path_len,
            is_root,
            not_after,
        })
    }

    fn check_names(&self, sans: &[SanType], cn: Option<&str>) -> Result<()> {
        for c in &self.constraints {
            for s in sans {
                let r = match s {
                    SanType::DnsName(d) => c.check(&Name::Dns(d.as_str())),
                    SanType::IpAddress(ip) => c.check(&Name::Ip(*ip)),
                    SanType::Rfc822Name(e) => c.check(&Name::Email(e.as_str())),
                    _ => Ok(()),
                };
                r.map_err(|e| PkiError::Refused(format!("refusing to issue: {e}")))?;
            }
            if let Some(cn) = cn {
                if let Ok(n) = tlskit_names::DnsName::parse(cn) {
                    if cn.contains('.') {
                        c.check(&Name::Dns(n.ascii())).map_err(|e| {
                            PkiError::Refused(format!("refusing to issue: the subject CN: {e}"))
                        })?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Pick a serial under the lock, sign, append to the index. Returns the certificate.
    fn sign_locked(
        &self,
        mut p: CertificateParams,
        spki: &rcgen::SubjectPublicKeyInfo,
        profile: Profile,
        on_lock_wait: Option<fn(&Path)>,
    ) -> Result<Issued> {
        let now = ::time::OffsetDateTime::now_utc();
        if self.not_after < now {
            return Err(PkiError::Refused(format!(
                "refusing to issue: the CA certificate expired on {}",
                tlskit_x509::datetime::rfc3339(self.not_after.unix_timestamp())
            )));
        }
        if profile == Profile::Intermediate && self.path_len == Some(0) {
            return Err(PkiError::Refused(
                "refusing to issue an intermediate: this CA has pathlen 0".into(),
            ));
        }
        if p.not_after > self.not_after {
            return Err(PkiError::Refused(format!(
                "refusing to issue: the certificate would outlive the CA (CA expires {}); ask for fewer --days",
                tlskit_x509::datetime::rfc3339(self.not_after.unix_timestamp())
            )));
        }
        p.use_authority_key_identifier_extension = true;
        let issuer = Issuer::from_ca_cert_der(&self.cert_der.as_slice().into(), &self.key)
            .map_err(PkiError::rcgen("reading the CA certificate"))?;

        let lock = lock_ca(&self.dir.join(LOCK), on_lock_wait)?;

        let index_path = self.dir.join(INDEX);
        let used = read_serials(&index_path)?;
        let serial = loop {
            let s = cert::random_serial()?;
            if !used.contains(&tlskit_x509::text::hex(&s)) {
                break s;
            }
        };
        // The canonical text (no sign byte: random_serial's first byte is 01..7f, so this
        // is also the INTEGER's content, as `show --json` has it).
        let serial_hex = tlskit_x509::text::serial(&serial);
        p.serial_number = Some(SerialNumber::from_slice(&serial));
        let c = p
            .signed_by(spki, &issuer)
            .map_err(PkiError::rcgen("signing the certificate"))
            .map_err(|e| self.key.explain(e))?;
        let der = c.der().to_vec();
        let sha256 = tlskit_x509::text::hex(&Sha256::digest(&der));
        // Whole seconds, as every timestamp tlskit writes (entries written before had
        // nanoseconds: they are read as the strings they are).
        let fmt = |t: ::time::OffsetDateTime| tlskit_x509::datetime::rfc3339(t.unix_timestamp());
        let entry = IndexEntry {
            serial: serial_hex.clone(),
            subject: subject_string(&der),
            sans: p.subject_alt_names.iter().map(san_string).collect(),
            profile: serde_json::to_value(profile)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            not_before: fmt(p.not_before),
            not_after: fmt(p.not_after),
            sha256,
            issued_at: fmt(::time::OffsetDateTime::now_utc()),
            revoked_at: None,
            revocation_reason: None,
        };
        append_index_line(&index_path, &entry)?;
        fsx::replace_state(&self.dir.join(SERIAL), format!("{serial_hex}\n").as_bytes())?;
        drop(lock); // releases the lock
        Ok(Issued {
            pem: c.pem(),
            entry,
        })
    }
}

fn subject_string(der: &[u8]) -> String {
    X509Certificate::from_der(der)
        .map(|(_, c)| dn::display(c.subject()))
        .unwrap_or_default()
}

pub(crate) fn san_string(s: &SanType) -> String {
    match s {
        SanType::DnsName(d) => format!("dns:{}", d.as_str()),
        SanType::IpAddress(ip) => format!("ip:{ip}"),
        SanType::Rfc822Name(e) => format!("email:{}", e.as_str()),
        SanType::URI(u) => format!("uri:{}", u.as_str()),
        _ => "a subjectAltName of another type".to_string(),
    }
}

/// Largest CA index `index` reads: 1 GiB (about three million certificates).
pub const MAX_INDEX_BYTES: u64 = 1 << 30;

fn read_serials(index: &Path) -> Result<HashSet<String>> {
    let mut out = HashSet::new();
    index_lines(index, |_, line| {
        if let IndexLine::Issue(e) = line {
            out.insert(e.serial.to_ascii_lowercase());
        }
        Ok(())
    })?;
    Ok(out)
}

fn first_cert(path: &Path, data: &[u8]) -> Result<Vec<u8>> {
    match key::pem_blocks(data) {
        Some(Ok(blocks)) => blocks
            .into_iter()
            .find(|(l, _)| l == "CERTIFICATE")
            .map(|(_, d)| d)
            .ok_or_else(|| PkiError::bad(path, "no CERTIFICATE in this PEM file")),
        Some(Err(e)) => Err(PkiError::content(path, e)),
        None => Ok(data.to_vec()),
    }
}

/// Options of `ca issue`.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct IssueOptions {
    /// Validity in days (profile default when `None`).
    pub days: Option<u32>,
    /// Profile.
    pub profile: Profile,
    /// pathLenConstraint for the intermediate profile (default 0).
    pub path_len: Option<u8>,
    /// Called once with the lock file's path when another process holds the CA's lock
    /// (the CLI says that it waits); the wait lasts at most [`LOCK_WAIT`].
    pub on_lock_wait: Option<fn(&Path)>,
    /// The CRL distribution point to put in the certificate (`None`: the CA's default,
    /// `DIR/crl-url`, if it has one).
    pub crl_url: Option<String>,
    /// Leave the CRL distribution point out, even the CA's default.
    pub no_crl_url: bool,
    /// The extended key usages of a server or client certificate (`None`: the profile's,
    /// serverAuth or clientAuth). An intermediate refuses them.
    pub extended_key_usage: Option<Vec<ExtendedKeyUsage>>,
}

/// An extended key usage a leaf certificate may carry (`ca serve`'s profiles choose
/// them; `ca issue --profile server|client` has one each).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum ExtendedKeyUsage {
    /// TLS server authentication (id-kp-serverAuth).
    ServerAuth,
    /// TLS client authentication (id-kp-clientAuth), for mTLS.
    ClientAuth,
}

impl ExtendedKeyUsage {
    /// The name as configuration files write it (`serverAuth`, `clientAuth`).
    pub fn name(self) -> &'static str {
        match self {
            ExtendedKeyUsage::ServerAuth => "serverAuth",
            ExtendedKeyUsage::ClientAuth => "clientAuth",
        }
    }
}

impl IssueOptions {
    /// Options with the defaults: the server profile and its default validity.
    pub fn new() -> Self {
        Self::default()
    }
    /// Validity in days (`None`: the profile's default).
    pub fn days(mut self, days: Option<u32>) -> Self {
        self.days = days;
        self
    }
    /// The profile.
    pub fn profile(mut self, profile: Profile) -> Self {
        self.profile = profile;
        self
    }
    /// pathLenConstraint for the intermediate profile (`None`: 0).
    pub fn path_len(mut self, path_len: Option<u8>) -> Self {
        self.path_len = path_len;
        self
    }
    /// Called once with the lock file's path when another process holds the CA's lock.
    pub fn on_lock_wait(mut self, on_lock_wait: Option<fn(&Path)>) -> Self {
        self.on_lock_wait = on_lock_wait;
        self
    }
    /// The CRL distribution point (`None`: the CA's default).
    pub fn crl_url(mut self, crl_url: Option<String>) -> Self {
        self.crl_url = crl_url;
        self
    }
    /// Leave the CRL distribution point out (`true`), even the CA's default.
    pub fn no_crl_url(mut self, no_crl_url: bool) -> Self {
        self.no_crl_url = no_crl_url;
        self
    }
    /// The extended key usages of a leaf (`None`: the profile's).
    pub fn extended_key_usage(mut self, eku: Option<Vec<ExtendedKeyUsage>>) -> Self {
        self.extended_key_usage = eku;
        self
    }
}

/// The result of `issue`.
#[derive(Debug, Clone)]
pub struct Issued {
    /// The new certificate, PEM.
    pub pem: String,
    /// What went into the index.
    pub entry: IndexEntry,
}

/// A request read and checked (signature verified, SANs validated).
struct Request {
    subject: rcgen::DistinguishedName,
    cn: Option<String>,
    sans: Vec<SanType>,
    spki: rcgen::SubjectPublicKeyInfo,
    rsa: bool,
}

fn read_request(path: &Path) -> Result<Request> {
    read_request_bytes(path, fsx::read(path)?)
}

/// A request from bytes (PEM or DER); `path` names it in errors.
fn read_request_bytes(path: &Path, data: Vec<u8>) -> Result<Request> {
    let der = match key::pem_blocks(&data) {
        Some(Ok(blocks)) => blocks
            .into_iter()
            .find(|(l, _)| l == "CERTIFICATE REQUEST" || l == "NEW CERTIFICATE REQUEST")
            .map(|(_, d)| d)
            .ok_or_else(|| PkiError::bad(path, "no CERTIFICATE REQUEST in this PEM file"))?,
        Some(Err(e)) => return Err(PkiError::content(path, e)),
        None => data,
    };
    let (_, req) = X509CertificationRequest::from_der(&der)
        .map_err(PkiError::parse(path, "not a certificate request"))?;
    req.verify_signature().map_err(|_| {
        PkiError::bad(
            path,
            "the request's signature does not verify (it was not signed by the key it carries)",
        )
    })?;
    let info = &req.certification_request_info;
    let subject = dn::from_x509(&info.subject).map_err(|e| PkiError::content(path, e))?;
    let cn = dn::common_name(&info.subject);
    let mut sans = Vec::new();
    if let Some(exts) = req.requested_extensions() {
        for ext in exts {
            if let ParsedExtension::SubjectAlternativeName(s) = ext {
                for g in &s.general_names {
                    sans.push(san_from_general(g).map_err(|e| PkiError::content(path, e))?);
                }
            }
        }
    }
    let spki = rcgen::SubjectPublicKeyInfo::from_der(info.subject_pki.raw).map_err(
        PkiError::parse(path, "unsupported public key in the request"),
    )?;
    let rsa =
        info.subject_pki.algorithm.algorithm == x509_parser::oid_registry::OID_PKCS1_RSAENCRYPTION;
    Ok(Request {
        subject,
        cn,
        sans,
        spki,
        rsa,
    })
}

/// Why a subjectAltName of a request was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RequestSanError {
    /// A DNS name that is not a valid host name (the SAN as written, and why).
    #[error("SAN {name:?} in the request: {source}")]
    Name {
        /// The SAN as written in the request.
        name: String,
        /// Why it was refused.
        #[source]
        source: tlskit_names::NameError,
    },
    /// rcgen refused the name's string.
    #[error("{0}")]
    Rcgen(#[source] rcgen::Error),
    /// An iPAddress SAN that is neither 4 nor 16 bytes.
    #[error("an IP address SAN in the request has a bad length")]
    IpLength,
    /// A SAN type tlskit does not issue (as x509-parser shows it).
    #[error("unsupported SAN type in the request: {0}")]
    Unsupported(String),
}

fn san_from_general(g: &GeneralName<'_>) -> Result<SanType, RequestSanError> {
    use rcgen::string::Ia5String;
    let bad_name = |d: &str| {
        let name = d.to_string();
        move |source| RequestSanError::Name { name, source }
    };
    match g {
        GeneralName::DNSName(d) => {
            tlskit_names::check_presented_dns(d).map_err(bad_name(d))?;
            let n = tlskit_names::DnsName::parse(d).map_err(bad_name(d))?;
            Ia5String::try_from(n.ascii())
                .map(SanType::DnsName)
                .map_err(RequestSanError::Rcgen)
        }
        GeneralName::IPAddress(b) => match b.len() {
            4 => Ok(SanType::IpAddress(std::net::IpAddr::from(
                <[u8; 4]>::try_from(*b).unwrap_or_default(),
            ))),
            16 => Ok(SanType::IpAddress(std::net::IpAddr::from(
                <[u8; 16]>::try_from(*b).unwrap_or_default(),
            ))),
            _ => Err(RequestSanError::IpLength),
        },
        GeneralName::RFC822Name(e) => Ia5String::try_from(*e)
            .map(SanType::Rfc822Name)
            .map_err(RequestSanError::Rcgen),
        GeneralName::URI(u) => Ia5String::try_from(*u)
            .map(SanType::URI)
            .map_err(RequestSanError::Rcgen),
        other => Err(RequestSanError::Unsupported(other.to_string())),
    }
}

/// Issue a certificate for the request at `csr` from the CA in `dir`. Returns the
/// certificate followed by the chain up to (not including) the root, PEM.
pub fn issue(dir: &Path, csr: &Path, opts: &IssueOptions) -> Result<(String, IndexEntry)> {
    let ca = Ca::open(dir)?;
    let req = read_request(csr)?;
    ca.issue_request(csr, req, opts)
}

impl Ca {
    /// [`issue`] on an open CA, for a request given as bytes (PEM or DER, as an ACME
    /// finalize carries it); `label` names the request in errors (a path or an order
    /// URL). Returns the certificate followed by the chain up to (not including) the
    /// root, PEM, and the index entry.
    pub fn issue_csr(
        &self,
        label: &Path,
        csr: &[u8],
        opts: &IssueOptions,
    ) -> Result<(String, IndexEntry)> {
        let req = read_request_bytes(label, csr.to_vec())?;
        self.issue_request(label, req, opts)
    }

    /// The directory this CA lives in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether this CA may name these in a certificate (`ca serve` asks at order time):
    /// [`PkiError::Refused`] with the constraint that excludes one (the CA's own or one of
    /// its chain's) otherwise.
    pub fn check_request_names(&self, sans: &[SanType]) -> Result<()> {
        self.check_names(sans, None)
    }

    fn issue_request(
        &self,
        csr: &Path,
        req: Request,
        opts: &IssueOptions,
    ) -> Result<(String, IndexEntry)> {
        let ca = self;
        let mut sans = req.sans;
        if sans.is_empty() {
            if let Some(s) = san::default_from_cn(&req.subject) {
                sans.push(s);
            } else if opts.profile == Profile::Server {
                return Err(PkiError::bad(
                csr,
                "the request has no subjectAltName and its CN is not a host name; a server certificate needs one (csr new --san dns:NAME)",
            ));
            }
        }
        ca.check_names(&sans, req.cn.as_deref())?;

        let days = opts.days.unwrap_or(opts.profile.default_days());
        let mut p = CertificateParams::default();
        p.distinguished_name = req.subject;
        p.subject_alt_names = sans;
        (p.not_before, p.not_after) = cert::validity(days)?;
        let crl_url = match opts.no_crl_url {
            true => None,
            false => opts.crl_url.as_ref().or(ca.crl_url.as_ref()),
        };
        if let Some(url) = crl_url {
            check_crl_url(url).map_err(|e| PkiError::Refused(format!("refusing to issue: {e}")))?;
            p.crl_distribution_points = vec![rcgen::CrlDistributionPoint {
                uris: vec![url.clone()],
            }];
        }
        let (server, client) = match (&opts.extended_key_usage, opts.profile) {
            (Some(_), Profile::Intermediate) => {
                return Err(PkiError::Refused(
                    "refusing to issue: an intermediate carries no extended key usage".into(),
                ))
            }
            (Some(eku), _) if eku.is_empty() => {
                return Err(PkiError::Refused(
                    "refusing to issue: a leaf needs serverAuth, clientAuth or both".into(),
                ))
            }
            (Some(eku), _) => (
                eku.contains(&ExtendedKeyUsage::ServerAuth),
                eku.contains(&ExtendedKeyUsage::ClientAuth),
            ),
            (None, Profile::Server) => (true, false),
            (None, _) => (false, true),
        };
        match opts.profile {
            Profile::Server | Profile::Client => {
                cert::set_leaf_usages(&mut p, req.rsa, server, client)
            }
            Profile::Intermediate => cert::set_ca_usages(&mut p, Some(opts.path_len.unwrap_or(0))),
        }
        let issued = ca.sign_locked(p, &req.spki, opts.profile, opts.on_lock_wait)?;
        let mut out = issued.pem;
        if !ca.is_root {
            out.push_str(&ca.cert_pem);
        }
        out.push_str(&ca.chain_pem);
        Ok((out, issued.entry))
    }
}

/// Issue and write the result to `out` (atomically; an existing file is refused unless
/// `force`). The existence check runs before anything is signed.
pub fn issue_to_file(
    dir: &Path,
    csr: &Path,
    opts: &IssueOptions,
    out: &Path,
    force: bool,
) -> Result<IndexEntry> {
    fsx::check_writable(out, force)?;
    let (pem, entry) = issue(dir, csr, opts)?;
    fsx::write_atomic(out, pem.as_bytes(), false, force)?;
    Ok(entry)
}

/// The entries of a CA's index, in issuance order, each with its revocation (the first
/// revocation record of its serial) folded in.
pub fn index(dir: &Path) -> Result<Vec<IndexEntry>> {
    let p = dir.join(INDEX);
    // A missing index is an error here (`ca list` on a directory that is not a CA).
    tlskit_io::open_regular(&p)?;
    let mut entries: Vec<IndexEntry> = Vec::new();
    let mut revoked: Vec<revocation::RevokeRecord> = Vec::new();
    index_lines(&p, |_, line| {
        match line {
            IndexLine::Issue(e) => entries.push(e),
            IndexLine::Revoke(r) => revoked.push(r),
        }
        Ok(())
    })?;
    if !revoked.is_empty() {
        let mut by_serial = std::collections::HashMap::new();
        for (i, e) in entries.iter().enumerate() {
            by_serial
                .entry(tlskit_x509::text::serial_from_hex(&e.serial))
                .or_insert(i);
        }
        for r in revoked {
            if let Some(&i) = by_serial.get(&tlskit_x509::text::serial_from_hex(&r.revoke)) {
                if entries[i].revoked_at.is_none() {
                    entries[i].revoked_at = Some(r.revoked_at);
                    entries[i].revocation_reason = Some(r.reason);
                }
            }
        }
    }
    Ok(entries)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn csr(dir: &Path, name: &str, sans: &[&str]) -> PathBuf {
        let key = KeyPair::generate().unwrap();
        let n = cert::names(
            &format!("CN={name}"),
            &sans.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        )
        .unwrap();
        let p = dir.join(format!("{name}.csr"));
        fs::write(&p, cert::csr_pem(&key, &n).unwrap()).unwrap();
        p
    }

    #[test]
    fn issue_keeps_sans_and_respects_constraints() {
        let t = tempfile::tempdir().unwrap();
        let ca = t.path().join("ca");
        init(
            &ca,
            &InitOptions {
                permit_dns: vec!["example.com".into()],
                days: 3650,
                ..Default::default()
            },
        )
        .unwrap();
        let r = csr(
            t.path(),
            "www.example.com",
            &["dns:www.example.com", "dns:api.example.com"],
        );
        let (pem, entry) = issue(&ca, &r, &IssueOptions::default()).unwrap();
        assert_eq!(
            entry.sans,
            vec!["dns:www.example.com", "dns:api.example.com"]
        );
        assert_eq!(
            pem.matches("BEGIN CERTIFICATE").count(),
            1,
            "root not included"
        );

        let bad = csr(t.path(), "www.example.org", &["dns:www.example.org"]);
        let e = issue(&ca, &bad, &IssueOptions::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("outside the name constraints"), "{e}");
        assert_eq!(index(&ca).unwrap().len(), 1);
    }

    /// Entries are written in whole seconds (tlskit's one RFC 3339 form); entries written
    /// before, with nanoseconds, are still read (and their serials still avoided).
    #[test]
    fn index_reads_old_fractional_entries_and_writes_whole_seconds() {
        let t = tempfile::tempdir().unwrap();
        let ca = t.path().join("ca");
        init(
            &ca,
            &InitOptions {
                days: 3650,
                ..Default::default()
            },
        )
        .unwrap();
        let old = r#"{"serial":"0a1b","subject":"CN=old","sans":["dns:old.example"],"profile":"server","not_before":"2026-11-23T21:21:15Z","not_after":"2027-11-23T21:21:15Z","sha256":"00","issued_at":"2026-11-23T21:21:15.022823133Z"}"#;
        fs::write(ca.join(INDEX), format!("{old}\n")).unwrap();
        assert!(read_serials(&ca.join(INDEX)).unwrap().contains("0a1b"));
        let r = csr(t.path(), "new.example", &["dns:new.example"]);
        let (_, entry) = issue(&ca, &r, &IssueOptions::default()).unwrap();
        let idx = index(&ca).unwrap();
        assert_eq!(idx.len(), 2);
        assert_eq!(idx[0].issued_at, "2026-11-23T21:21:15.022823133Z");
        for ts in [&entry.issued_at, &entry.not_before, &entry.not_after] {
            assert_eq!(ts.len(), "2026-11-23T21:21:15Z".len(), "{ts}");
            assert!(ts.ends_with('Z') && !ts.contains('.'), "{ts}");
        }
    }

    /// A crash in the middle of an append leaves a last line without its newline: it is
    /// skipped when the index is read, and cut off by the next issue, whose line then
    /// stands on its own. A broken line that is not the last is still an error.
    #[test]
    fn a_torn_last_index_line_is_skipped_then_cut_off() {
        let t = tempfile::tempdir().unwrap();
        let ca = t.path().join("ca");
        init(
            &ca,
            &InitOptions {
                days: 3650,
                ..Default::default()
            },
        )
        .unwrap();
        let r = csr(t.path(), "a.example", &["dns:a.example"]);
        issue(&ca, &r, &IssueOptions::default()).unwrap();
        let whole = fs::read(ca.join(INDEX)).unwrap();
        let mut torn = whole.clone();
        torn.extend_from_slice(br#"{"serial":"0a1b","subject":"CN=cut"#);
        fs::write(ca.join(INDEX), &torn).unwrap();
        assert_eq!(index(&ca).unwrap().len(), 1);

        let r = csr(t.path(), "b.example", &["dns:b.example"]);
        issue(&ca, &r, &IssueOptions::default()).unwrap();
        let after = fs::read(ca.join(INDEX)).unwrap();
        assert!(after.starts_with(&whole));
        assert!(!String::from_utf8_lossy(&after).contains("CN=cut"));
        let idx = index(&ca).unwrap();
        assert_eq!(idx.len(), 2);
        assert_eq!(idx[1].sans, ["dns:b.example"]);

        let mut broken = b"{not json\n".to_vec();
        broken.extend_from_slice(&after);
        fs::write(ca.join(INDEX), &broken).unwrap();
        let err = index(&ca).unwrap_err().to_string();
        assert!(err.contains("line 1"), "{err}");
    }

    fn cdp_uris(pem: &str) -> Vec<String> {
        let der = key::pem_blocks(pem.as_bytes()).unwrap().unwrap()[0]
            .1
            .clone();
        let (_, x) = X509Certificate::from_der(&der).unwrap();
        let mut out = Vec::new();
        for e in x.extensions() {
            if let ParsedExtension::CRLDistributionPoints(d) = e.parsed_extension() {
                for p in d.iter() {
                    if let Some(DistributionPointName::FullName(names)) = &p.distribution_point {
                        for n in names {
                            if let GeneralName::URI(u) = n {
                                out.push(u.to_string());
                            }
                        }
                    }
                }
            }
        }
        out
    }

    /// The CA's default CRL URL goes into what it issues; `IssueOptions::crl_url` wins.
    #[test]
    fn crl_url_default_and_override() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("ca");
        for bad in [
            "ftp://x/crl",
            "http://",
            "http://:80/x",
            "http://a b/crl",
            "http://x/\u{1b}[31m",
            "http://\u{e9}.example/",
            "crl.example/x.crl",
        ] {
            let e = init(
                &dir,
                &InitOptions::new().days(365).crl_url(Some(bad.into())),
            )
            .unwrap_err();
            assert!(matches!(e, PkiError::Refused(_)), "{bad}: {e}");
            assert!(!dir.exists(), "{bad}: nothing written");
        }
        let url = "http://crl.example/ca.crl";
        init(
            &dir,
            &InitOptions::new().days(365).crl_url(Some(url.into())),
        )
        .unwrap();
        assert_eq!(
            fs::read_to_string(dir.join(CRL_URL)).unwrap(),
            format!("{url}\n")
        );
        let r = csr(t.path(), "c.example", &[]);
        let (pem, _) = issue(&dir, &r, &IssueOptions::new()).unwrap();
        assert_eq!(cdp_uris(&pem), vec![url]);
        let other = "HTTPS://Other.example/x.crl?a=1";
        let (pem, _) = issue(&dir, &r, &IssueOptions::new().crl_url(Some(other.into()))).unwrap();
        assert_eq!(cdp_uris(&pem), vec![other]);
        let e = issue(
            &dir,
            &r,
            &IssueOptions::new().crl_url(Some("file:///x".into())),
        )
        .unwrap_err();
        assert!(e.to_string().contains("http:// or https://"), "{e}");
        // A CA without a default issues without a distribution point.
        let plain = t.path().join("plain");
        init(&plain, &InitOptions::new().days(365)).unwrap();
        let (pem, _) = issue(&plain, &r, &IssueOptions::new()).unwrap();
        assert!(cdp_uris(&pem).is_empty());
    }

    fn ekus(pem: &str) -> (bool, bool) {
        let der = key::pem_blocks(pem.as_bytes()).unwrap().unwrap()[0]
            .1
            .clone();
        let (_, x) = X509Certificate::from_der(&der).unwrap();
        let e = x
            .extended_key_usage()
            .unwrap()
            .expect("an EKU extension")
            .value;
        (e.server_auth, e.client_auth)
    }

    /// `ca serve`'s profiles: explicit extended key usages, and no distribution point
    /// even where the CA has a default.
    #[test]
    fn extended_key_usage_and_no_crl_url_options() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("ca");
        let url = "http://crl.example/ca.crl";
        init(
            &dir,
            &InitOptions::new().days(365).crl_url(Some(url.into())),
        )
        .unwrap();
        let r = csr(t.path(), "m.example", &["dns:m.example"]);
        let (pem, _) = issue(&dir, &r, &IssueOptions::new()).unwrap();
        assert_eq!(ekus(&pem), (true, false));
        let (pem, _) = issue(&dir, &r, &IssueOptions::new().profile(Profile::Client)).unwrap();
        assert_eq!(ekus(&pem), (false, true));
        use ExtendedKeyUsage::*;
        let (pem, e) = issue(
            &dir,
            &r,
            &IssueOptions::new().extended_key_usage(Some(vec![ServerAuth, ClientAuth])),
        )
        .unwrap();
        assert_eq!(ekus(&pem), (true, true));
        assert_eq!(e.profile, "server");
        assert_eq!(cdp_uris(&pem), vec![url]);
        let (pem, _) = issue(
            &dir,
            &r,
            &IssueOptions::new()
                .profile(Profile::Client)
                .extended_key_usage(Some(vec![ClientAuth]))
                .no_crl_url(true),
        )
        .unwrap();
        assert_eq!(ekus(&pem), (false, true));
        assert!(cdp_uris(&pem).is_empty());
        for bad in [
            IssueOptions::new().extended_key_usage(Some(vec![])),
            IssueOptions::new()
                .profile(Profile::Intermediate)
                .extended_key_usage(Some(vec![ServerAuth])),
        ] {
            let e = issue(&dir, &r, &bad).unwrap_err();
            assert!(matches!(e, PkiError::Refused(_)), "{e}");
        }
    }

    /// A request as DER bytes (an ACME finalize), through the open handle.
    #[test]
    fn issue_csr_takes_der_bytes() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("ca");
        init(&dir, &InitOptions::new().days(3650)).unwrap();
        let r = csr(t.path(), "d.example", &["dns:d.example"]);
        let pem = fs::read(&r).unwrap();
        let der = key::pem_blocks(&pem).unwrap().unwrap()[0].1.clone();
        let ca = Ca::open(&dir).unwrap();
        assert_eq!(ca.dir(), dir);
        let (out, entry) = ca
            .issue_csr(Path::new("order 1"), &der, &IssueOptions::new())
            .unwrap();
        assert!(out.starts_with("-----BEGIN CERTIFICATE-----"));
        assert_eq!(entry.sans, vec!["dns:d.example"]);
        let e = ca
            .issue_csr(Path::new("order 2"), b"junk", &IssueOptions::new())
            .unwrap_err();
        assert!(e.to_string().starts_with("order 2: "), "{e}");
    }

    #[test]
    fn serials_unique_across_threads() {
        let t = tempfile::tempdir().unwrap();
        let ca = t.path().join("ca");
        init(
            &ca,
            &InitOptions {
                days: 3650,
                ..Default::default()
            },
        )
        .unwrap();
        let r = csr(t.path(), "a.example", &[]);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..5 {
                        issue(&ca, &r, &IssueOptions::default()).unwrap();
                    }
                });
            }
        });
        let idx = index(&ca).unwrap();
        assert_eq!(idx.len(), 20);
        let set: HashSet<_> = idx.iter().map(|e| e.serial.clone()).collect();
        assert_eq!(set.len(), 20);
    }

    #[test]
    fn intermediate_ca_chain() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("root");
        let sub = t.path().join("sub");
        init(
            &root,
            &InitOptions {
                days: 3650,
                ..Default::default()
            },
        )
        .unwrap();
        init(
            &sub,
            &InitOptions {
                days: 1000,
                parent: Some(root.clone()),
                subject: Some("CN=Sub CA".into()),
                ..Default::default()
            },
        )
        .unwrap();
        let r = csr(t.path(), "x.example", &[]);
        let (pem, _) = issue(&sub, &r, &IssueOptions::default()).unwrap();
        assert_eq!(pem.matches("BEGIN CERTIFICATE").count(), 2);
        assert_eq!(index(&root).unwrap()[0].profile, "intermediate");
    }
}
