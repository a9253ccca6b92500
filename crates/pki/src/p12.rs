//! PKCS#12 export and import with the `p12-keystore` crate: PBES2 (PBKDF2-HMAC-SHA256,
//! AES-256-CBC) for keys and certificates and an HMAC-SHA256 MAC, as OpenSSL 3 writes by
//! default. The legacy RC2/3DES schemes are not compiled in; such files are refused with
//! a message saying how to convert them.

use std::path::Path;

use der::asn1::{Any, ContextSpecific, ObjectIdentifier, OctetString};
use der::{Decode, Encode};
use p12_keystore::{
    Certificate, KeyStore, KeyStoreEntry, LocalKeyId, Pkcs12Archive, PrivateKey, PrivateKeyChain,
};
use pkcs12::cms::cert::x509::spki::AlgorithmIdentifierOwned;
use pkcs12::cms::content_info::ContentInfo;
use pkcs12::cms::encrypted_data::EncryptedData;
use pkcs12::pbe_params::EncryptedPrivateKeyInfo;
use pkcs12::pfx::Pfx;
use pkcs12::safe_bag::SafeContents;
use pkcs5::pbes2;
use rcgen::PublicKeyData;
use x509_parser::prelude::*;

use crate::{dn, fsx, key, PkiError, Result};

/// Read certificates (PEM blocks or one DER certificate) from a file.
pub fn read_certs(path: &Path) -> Result<Vec<Vec<u8>>> {
    let data = fsx::read(path)?;
    let certs: Vec<Vec<u8>> = match key::pem_blocks(&data) {
        Some(Ok(b)) => b
            .into_iter()
            .filter(|(l, _)| l == "CERTIFICATE")
            .map(|(_, d)| d)
            .collect(),
        Some(Err(e)) => return Err(PkiError::content(path, e)),
        None => vec![data],
    };
    if certs.is_empty() {
        return Err(PkiError::bad(path, "no CERTIFICATE found"));
    }
    for (i, c) in certs.iter().enumerate() {
        X509Certificate::from_der(c)
            .map_err(PkiError::parse(path, format!("certificate #{}", i + 1)))?;
    }
    Ok(certs)
}

fn spki_of(cert: &[u8]) -> Option<Vec<u8>> {
    X509Certificate::from_der(cert)
        .ok()
        .map(|(_, c)| c.public_key().raw.to_vec())
}

/// Build a PKCS#12 file from a key and its certificate (plus chain) files.
pub fn export(key_path: &Path, cert_path: &Path, password: &str) -> Result<Vec<u8>> {
    let (kp, pkcs8) = key::load_with_pkcs8(key_path)?;
    let certs = read_certs(cert_path)?;
    let spki = kp.subject_public_key_info();
    if spki_of(&certs[0]).as_deref() != Some(spki.as_slice()) {
        return Err(PkiError::Mismatch(format!(
            "{} does not match the first certificate in {} (their public keys differ)",
            key_path.display(),
            cert_path.display()
        )));
    }
    let alias = X509Certificate::from_der(&certs[0])
        .ok()
        .and_then(|(_, c)| dn::common_name(c.subject()))
        .unwrap_or_else(|| "tlskit".to_string());
    let p12_key =
        PrivateKey::from_der(&pkcs8).map_err(PkiError::parse(key_path, "not a PKCS#8 key"))?;
    let mut chain = Vec::new();
    for c in &certs {
        chain.push(Certificate::from_der(c).map_err(PkiError::parse(cert_path, "certificate"))?);
    }
    let id = crate::inspect::sha256_hex(&certs[0]);
    let local_key_id = LocalKeyId(id.as_bytes()[..20].to_vec());
    let mut ks = KeyStore::new();
    ks.add_entry(
        &alias,
        KeyStoreEntry::PrivateKeyChain(PrivateKeyChain::new(local_key_id, p12_key, chain)),
    );
    ks.writer(password)
        .write()
        .map_err(PkiError::failed("writing the PKCS#12 file"))
}

/// Export and write atomically (mode 0600).
pub fn export_to_file(
    key_path: &Path,
    cert_path: &Path,
    password: &str,
    out: &Path,
    force: bool,
) -> Result<()> {
    fsx::check_absent(out, force)?;
    let bytes = export(key_path, cert_path, password)?;
    fsx::write_atomic(out, &bytes, true, force)
}

/// What a PKCS#12 file held.
#[derive(Debug)]
pub struct Imported {
    /// The private key, PKCS#8 DER.
    pub key_pkcs8: Vec<u8>,
    /// The certificate matching the key first, then the others in file order.
    pub certs: Vec<Vec<u8>>,
}

/// Default for [`P12Limits::max_iterations`]: ten times what tlskit writes (10,000) and
/// about fifty times OpenSSL 3's default (2,048); a tenth of what `p12-keystore` accepts.
pub const DEFAULT_MAX_ITERATIONS: u32 = 100_000;

/// Limits on the key-derivation work a PKCS#12 file may ask of `import`. The file names
/// its own iteration counts and scrypt parameters, and `p12-keystore` accepts up to
/// 1,000,000 iterations per derivation and 1 GiB of scrypt memory, so without these a
/// hostile file costs seconds of CPU (or much memory) per derivation before the password
/// is even known to be right. They are checked before any derivation is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct P12Limits {
    /// Most iterations of one PBKDF2 or PKCS#12-KDF (MAC) derivation.
    pub max_iterations: u32,
    /// Most scrypt work of one derivation, 128·N·r·p bytes.
    pub max_scrypt_bytes: u64,
    /// Most derivations in one file: the MAC, each encrypted safe, each encrypted key.
    pub max_derivations: usize,
}

impl Default for P12Limits {
    fn default() -> Self {
        Self {
            max_iterations: DEFAULT_MAX_ITERATIONS,
            max_scrypt_bytes: 64 << 20,
            max_derivations: 16,
        }
    }
}

impl P12Limits {
    /// Most iterations of one PBKDF2 or PKCS#12-KDF (MAC) derivation.
    pub fn max_iterations(mut self, max_iterations: u32) -> Self {
        self.max_iterations = max_iterations;
        self
    }
    /// Most scrypt work of one derivation, 128·N·r·p bytes.
    pub fn max_scrypt_bytes(mut self, max_scrypt_bytes: u64) -> Self {
        self.max_scrypt_bytes = max_scrypt_bytes;
        self
    }
    /// Most derivations in one file.
    pub fn max_derivations(mut self, max_derivations: usize) -> Self {
        self.max_derivations = max_derivations;
        self
    }
}

const ID_DATA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.7.1");
const ID_ENCRYPTED_DATA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.7.6");
const SHROUDED_KEY_BAG: ObjectIdentifier =
    ObjectIdentifier::new_unwrap("1.2.840.113549.1.12.10.1.2");
const SECRET_BAG: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.12.10.1.5");

/// A secret bag as `p12-keystore` reads it (its attributes taken as anything, so this
/// parses whatever it parses).
#[derive(der::Sequence)]
struct SecretBagValue {
    _oid: ObjectIdentifier,
    #[asn1(context_specific = "0")]
    encrypted: OctetString,
    _attributes: Option<Any>,
}

/// Walks a PKCS#12 file the way `p12-keystore` will and counts the derivations it will
/// do, refusing before any is done when one asks too much. Whatever does not parse here
/// is left for `p12-keystore` to refuse (it parses with the same types, so it stops at
/// the same place, before deriving anything from it).
struct CostCheck<'a> {
    path: &'a Path,
    limits: &'a P12Limits,
    derivations: usize,
}

impl CostCheck<'_> {
    fn refuse(&self, reason: String) -> PkiError {
        PkiError::Limit {
            path: self.path.to_path_buf(),
            reason,
        }
    }

    fn derivation(&mut self) -> Result<()> {
        self.derivations += 1;
        if self.derivations > self.limits.max_derivations {
            return Err(self.refuse(format!(
                "needs more than {} key derivations (MAC, encrypted safes and keys)",
                self.limits.max_derivations
            )));
        }
        Ok(())
    }

    fn iterations(&mut self, what: &str, n: u64) -> Result<()> {
        self.derivation()?;
        if n > u64::from(self.limits.max_iterations) {
            return Err(self.refuse(format!(
                "{what} iteration count {n} exceeds the limit {}; pass --max-iterations {n} to allow it",
                self.limits.max_iterations
            )));
        }
        Ok(())
    }

    /// Check an encryption algorithm; the PBES2 parameters when it is PBES2 (the only
    /// scheme tlskit decrypts: the legacy PBES1 ones are refused without any work).
    fn algorithm(
        &mut self,
        what: &str,
        alg: &AlgorithmIdentifierOwned,
    ) -> Result<Option<pbes2::Parameters>> {
        if alg.oid != pbes2::PBES2_OID {
            return Ok(None);
        }
        let Some(params) = alg.parameters.as_ref().and_then(|p| p.to_der().ok()) else {
            return Ok(None);
        };
        let Ok(params) = pbes2::Parameters::from_der(&params) else {
            return Ok(None);
        };
        match &params.kdf {
            pbes2::Kdf::Pbkdf2(k) => self.iterations(what, u64::from(k.iteration_count))?,
            pbes2::Kdf::Scrypt(s) => {
                self.derivation()?;
                let work = 128u64
                    .checked_mul(s.cost_parameter)
                    .and_then(|w| w.checked_mul(u64::from(s.block_size)))
                    .and_then(|w| w.checked_mul(u64::from(s.parallelization)));
                if work.is_none_or(|w| w > self.limits.max_scrypt_bytes) {
                    return Err(self.refuse(format!(
                        "{what} asks for scrypt with N={}, r={}, p={}, more than the limit of {} MiB of work",
                        s.cost_parameter,
                        s.block_size,
                        s.parallelization,
                        self.limits.max_scrypt_bytes >> 20
                    )));
                }
            }
            // (`Kdf` is non-exhaustive; pkcs5 knows no other.)
            _ => self.derivation()?,
        }
        Ok(Some(params))
    }

    fn bags(&mut self, contents: &[u8]) -> Result<()> {
        let Ok(bags) = SafeContents::from_der(contents) else {
            return Ok(());
        };
        for bag in &bags {
            if bag.bag_id == SHROUDED_KEY_BAG {
                if let Ok(k) = ContextSpecific::<EncryptedPrivateKeyInfo>::from_der(&bag.bag_value)
                {
                    self.algorithm("key encryption", &k.value.encryption_algorithm)?;
                }
            } else if bag.bag_id == SECRET_BAG {
                let secret = Any::from_der(&bag.bag_value)
                    .ok()
                    .and_then(|env| SecretBagValue::from_der(env.value()).ok())
                    .and_then(|s| EncryptedPrivateKeyInfo::from_der(s.encrypted.as_bytes()).ok());
                if let Some(k) = secret {
                    self.algorithm("secret encryption", &k.encryption_algorithm)?;
                }
            }
        }
        Ok(())
    }

    fn check(&mut self, data: &[u8], password: &str) -> Result<()> {
        let Ok(pfx) = Pfx::from_der(data) else {
            return Ok(());
        };
        if let Some(mac) = &pfx.mac_data {
            self.iterations("MAC", u64::try_from(mac.iterations).unwrap_or(0))?;
        }
        if pfx.auth_safe.content_type != ID_DATA {
            return Ok(());
        }
        let Some(safes) = pfx
            .auth_safe
            .content
            .to_der()
            .ok()
            .and_then(|d| OctetString::from_der(&d).ok())
            .and_then(|o| Vec::<ContentInfo>::from_der(o.as_bytes()).ok())
        else {
            return Ok(());
        };
        // Every safe's own parameters first, so a refusal costs no derivation at all.
        let mut encrypted = Vec::new();
        for safe in &safes {
            if safe.content_type == ID_DATA {
                if let Some(o) = safe
                    .content
                    .to_der()
                    .ok()
                    .and_then(|d| OctetString::from_der(&d).ok())
                {
                    self.bags(o.as_bytes())?;
                }
            } else if safe.content_type == ID_ENCRYPTED_DATA {
                let Some(ed) = safe
                    .content
                    .to_der()
                    .ok()
                    .and_then(|d| EncryptedData::from_der(&d).ok())
                else {
                    continue;
                };
                let info = &ed.enc_content_info;
                if let (Some(params), Some(ct)) = (
                    self.algorithm("safe encryption", &info.content_enc_alg)?,
                    info.encrypted_content.as_ref(),
                ) {
                    encrypted.push((params, ct.as_bytes().to_vec()));
                }
            }
        }
        // Then the keys inside encrypted safes, which can only be seen by decrypting them
        // (within the limits just checked; p12-keystore decrypts them again).
        for (params, ct) in encrypted {
            if let Ok(plain) = params.decrypt(password.as_bytes(), &ct) {
                self.bags(&plain)?;
            }
        }
        Ok(())
    }
}

/// Read a PKCS#12 file, within the default [`P12Limits`].
pub fn import(path: &Path, password: &str) -> Result<Imported> {
    import_with_limits(path, password, &P12Limits::default())
}

/// Read a PKCS#12 file; a file asking for more key-derivation work than `limits` allow
/// is refused ([`PkiError::Limit`]) before any is done.
pub fn import_with_limits(path: &Path, password: &str, limits: &P12Limits) -> Result<Imported> {
    let data = fsx::read(path)?;
    CostCheck {
        path,
        limits,
        derivations: 0,
    }
    .check(&data, password)?;
    let archive = Pkcs12Archive::from_pkcs12(&data, password).map_err(|e| match e {
        p12_keystore::error::Error::MacError(_) => PkiError::WrongPassword {
            path: path.to_path_buf(),
        },
        p12_keystore::error::Error::UnsupportedEncryptionScheme => PkiError::bad(
            path,
            "uses a legacy encryption scheme (RC2/3DES, OpenSSL 1.x default), which tlskit does not read; convert it with `openssl pkcs12 -legacy -in OLD -nodes | openssl pkcs12 -export -out NEW`",
        ),
        other => PkiError::bad(path, format!("not a readable PKCS#12 file: {other}")),
    })?;
    let Some(k) = archive.keys.first() else {
        return Err(PkiError::bad(path, "holds no private key"));
    };
    if archive.keys.len() > 1 {
        return Err(PkiError::bad(
            path,
            format!(
                "holds {} private keys; tlskit imports files with one",
                archive.keys.len()
            ),
        ));
    }
    let key_der = k.key.as_der().to_vec();
    let kp = rcgen::KeyPair::try_from(key_der.as_slice())
        .map_err(PkiError::parse(path, "unsupported private key"))?;
    let spki = kp.subject_public_key_info();
    let all: Vec<Vec<u8>> = archive
        .certs
        .iter()
        .map(|c| c.cert.as_der().to_vec())
        .collect();
    let Some(leaf) = all
        .iter()
        .position(|c| spki_of(c).as_deref() == Some(spki.as_slice()))
    else {
        return Err(PkiError::Mismatch(format!(
            "{}: no certificate in the file matches its private key",
            path.display()
        )));
    };
    let mut certs = vec![all[leaf].clone()];
    certs.extend(
        all.iter()
            .enumerate()
            .filter(|(i, _)| *i != leaf)
            .map(|(_, c)| c.clone()),
    );
    Ok(Imported {
        key_pkcs8: key_der,
        certs,
    })
}

/// Import and write the key (0600) and certificates; both files or neither.
pub fn import_to_files(
    path: &Path,
    password: &str,
    key_out: &Path,
    cert_out: &Path,
    force: bool,
) -> Result<Imported> {
    import_to_files_with_limits(
        path,
        password,
        key_out,
        cert_out,
        force,
        &P12Limits::default(),
    )
}

/// [`import_to_files`] within `limits`.
pub fn import_to_files_with_limits(
    path: &Path,
    password: &str,
    key_out: &Path,
    cert_out: &Path,
    force: bool,
    limits: &P12Limits,
) -> Result<Imported> {
    fsx::check_absent(key_out, force)?;
    fsx::check_absent(cert_out, force)?;
    let imp = import_with_limits(path, password, limits)?;
    let key_pem = key::pem_encode("PRIVATE KEY", &imp.key_pkcs8);
    let certs_pem: String = imp
        .certs
        .iter()
        .map(|c| key::pem_encode("CERTIFICATE", c))
        .collect();
    fsx::write_all_or_nothing(
        &[
            fsx::Output {
                path: key_out,
                bytes: key_pem.as_bytes(),
                private: true,
            },
            fsx::Output {
                path: cert_out,
                bytes: certs_pem.as_bytes(),
                private: false,
            },
        ],
        force,
    )?;
    Ok(imp)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_wrong_password() {
        let t = tempfile::tempdir().unwrap();
        let kp = t.path().join("k.pem");
        let cp = t.path().join("c.pem");
        key::generate_to_file(key::KeyType::P256, &kp, false).unwrap();
        let k = key::load(&kp).unwrap();
        let n = crate::cert::names("CN=p12.example", &[]).unwrap();
        std::fs::write(
            &cp,
            crate::cert::self_signed_pem(&k, &n, 30, false).unwrap(),
        )
        .unwrap();
        let bytes = export(&kp, &cp, "s3cret").unwrap();
        let p = t.path().join("x.p12");
        std::fs::write(&p, bytes).unwrap();
        let imp = import(&p, "s3cret").unwrap();
        assert_eq!(imp.certs.len(), 1);
        assert!(matches!(
            import(&p, "nope"),
            Err(PkiError::WrongPassword { .. })
        ));
    }

    /// A key and self-signed certificate in `dir`, exported with the given iteration
    /// counts (written with p12-keystore directly: `export` uses its defaults).
    fn p12_with(dir: &Path, mac_iter: u32, enc_iter: u32) -> Vec<u8> {
        p12_with_secret(dir, mac_iter, enc_iter, false)
    }

    fn p12_with_secret(dir: &Path, mac_iter: u32, enc_iter: u32, secret: bool) -> Vec<u8> {
        let kp = dir.join("k.pem");
        key::generate_to_file(key::KeyType::P256, &kp, true).unwrap();
        let (k, pkcs8) = key::load_with_pkcs8(&kp).unwrap();
        let n = crate::cert::names("CN=limits.example", &[]).unwrap();
        let pem = crate::cert::self_signed_pem(&k, &n, 30, false).unwrap();
        let der = crate::key::pem_blocks(pem.as_bytes()).unwrap().unwrap()[0]
            .1
            .clone();
        let mut ks = KeyStore::new();
        ks.add_entry(
            "limits",
            KeyStoreEntry::PrivateKeyChain(PrivateKeyChain::new(
                LocalKeyId(vec![1; 20]),
                PrivateKey::from_der(&pkcs8).unwrap(),
                vec![Certificate::from_der(&der).unwrap()],
            )),
        );
        if secret {
            let s = p12_keystore::secret::Secret::builder(p12_keystore::secret::SecretKeyType::Aes)
                .with_length(32)
                .build()
                .unwrap();
            ks.add_entry("secret", KeyStoreEntry::Secret(s));
        }
        ks.writer("pw")
            .mac_iterations(mac_iter)
            .encryption_iterations(enc_iter)
            .write()
            .unwrap()
    }

    fn limit_reason(r: Result<Imported>) -> String {
        match r {
            Err(PkiError::Limit { reason, .. }) => reason,
            other => panic!("expected a limit error, got {other:?}"),
        }
    }

    #[test]
    fn key_derivation_cost_is_capped_before_any_work() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("x.p12");
        std::fs::write(&p, p12_with(t.path(), 100, 300)).unwrap();
        let tight = |max_iterations, max_derivations| P12Limits {
            max_iterations,
            max_derivations,
            ..P12Limits::default()
        };
        assert_eq!(import(&p, "pw").unwrap().certs.len(), 1);
        // MAC within, encryption over: refused, naming the count and the flag.
        let why = limit_reason(import_with_limits(&p, "pw", &tight(200, 16)));
        assert!(
            why.contains("encryption iteration count 300 exceeds the limit 200"),
            "{why}"
        );
        assert!(why.contains("--max-iterations 300"), "{why}");
        let why = limit_reason(import_with_limits(&p, "pw", &tight(50, 16)));
        assert!(why.starts_with("MAC iteration count 100 exceeds"), "{why}");
        // The MAC, the encrypted safe and the key: three derivations.
        assert!(import_with_limits(&p, "pw", &tight(300, 3)).is_ok());
        let why = limit_reason(import_with_limits(&p, "pw", &tight(300, 2)));
        assert!(why.contains("more than 2 key derivations"), "{why}");
        // Checked before the password: a wrong one still gets the limit error.
        let why = limit_reason(import_with_limits(&p, "nope", &tight(200, 16)));
        assert!(why.contains("exceeds the limit 200"), "{why}");
    }

    /// A secret bag (which `import` ignores, but p12-keystore decrypts) counts too.
    #[test]
    fn secret_bags_are_counted() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("s.p12");
        std::fs::write(&p, p12_with_secret(t.path(), 100, 300, true)).unwrap();
        let limits = |max_iterations, max_derivations| P12Limits {
            max_iterations,
            max_derivations,
            ..P12Limits::default()
        };
        assert!(import_with_limits(&p, "pw", &limits(300, 4)).is_ok());
        let why = limit_reason(import_with_limits(&p, "pw", &limits(300, 3)));
        assert!(why.contains("more than 3 key derivations"), "{why}");
    }

    /// A hostile file asking for p12-keystore's maximum (1,000,000 MAC iterations, seconds
    /// of work) is refused under the default limits without deriving anything.
    #[test]
    fn hostile_mac_iteration_count_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let mut pfx = Pfx::from_der(&p12_with(t.path(), 1, 1)).unwrap();
        if let Some(mac) = pfx.mac_data.as_mut() {
            mac.iterations = 1_000_000;
        }
        let p = t.path().join("hostile.p12");
        std::fs::write(&p, pfx.to_der().unwrap()).unwrap();
        let why = limit_reason(import(&p, "pw"));
        assert!(
            why.contains("MAC iteration count 1000000 exceeds the limit 100000"),
            "{why}"
        );
        let e = import(&p, "pw").unwrap_err().to_string();
        assert!(e.starts_with(&p.display().to_string()), "{e}");
    }

    #[test]
    fn mismatched_key_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let kp = t.path().join("k.pem");
        let other = t.path().join("o.pem");
        let cp = t.path().join("c.pem");
        key::generate_to_file(key::KeyType::P256, &kp, false).unwrap();
        key::generate_to_file(key::KeyType::P256, &other, false).unwrap();
        let k = key::load(&kp).unwrap();
        let n = crate::cert::names("CN=p12.example", &[]).unwrap();
        std::fs::write(
            &cp,
            crate::cert::self_signed_pem(&k, &n, 30, false).unwrap(),
        )
        .unwrap();
        assert!(matches!(
            export(&other, &cp, "x"),
            Err(PkiError::Mismatch(_))
        ));
    }
}
