//! PKCS#12 export and import with the `p12-keystore` crate: PBES2 (PBKDF2-HMAC-SHA256,
//! AES-256-CBC) for keys and certificates and an HMAC-SHA256 MAC, as OpenSSL 3 writes by
//! default. The legacy RC2/3DES schemes are not compiled in; such files are refused with
//! a message saying how to convert them.

use std::path::Path;

use p12_keystore::{
    Certificate, KeyStore, KeyStoreEntry, LocalKeyId, Pkcs12Archive, PrivateKey, PrivateKeyChain,
};
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
        Some(Err(e)) => return Err(PkiError::bad(path, e)),
        None => vec![data],
    };
    if certs.is_empty() {
        return Err(PkiError::bad(path, "no CERTIFICATE found"));
    }
    for (i, c) in certs.iter().enumerate() {
        X509Certificate::from_der(c)
            .map_err(|e| PkiError::bad(path, format!("certificate #{}: {e}", i + 1)))?;
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
    let p12_key = PrivateKey::from_der(&pkcs8)
        .map_err(|e| PkiError::bad(key_path, format!("not a PKCS#8 key: {e}")))?;
    let mut chain = Vec::new();
    for c in &certs {
        chain.push(
            Certificate::from_der(c)
                .map_err(|e| PkiError::bad(cert_path, format!("certificate: {e}")))?,
        );
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
        .map_err(|e| PkiError::Other(format!("writing the PKCS#12 file: {e}")))
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

/// Read a PKCS#12 file.
pub fn import(path: &Path, password: &str) -> Result<Imported> {
    let data = fsx::read(path)?;
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
        .map_err(|e| PkiError::bad(path, format!("unsupported private key: {e}")))?;
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
    fsx::check_absent(key_out, force)?;
    fsx::check_absent(cert_out, force)?;
    let imp = import(path, password)?;
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
