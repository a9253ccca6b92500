//! Generates the peer benchmark's data set (see bench/README.md).
//!
//! `bench-gen DATA_DIR N[,N...]` writes, for the largest N, that many self-signed P-256 CA
//! certificates (distinct subjects, basicConstraints CA, subjectKeyIdentifier, keyCertSign),
//! and for each N:
//! - `ca/bundle-N.pem`: the first N of them as one PEM bundle;
//! - `ca/dir-N/`: the same N as one file each (OpenSSL-style directory, no hash links);
//! - `verify/roots-N.pem`: N anchors: the first N-1 CAs followed by the root of the
//!   verification chain (last, so a linear scan pays for the whole store);
//!
//! plus `verify/{root,intermediate,leaf,chain}.pem`: leaf (SAN bench.example, serverAuth EKU)
//! ← intermediate ← root, all P-256; `chain.pem` is the leaf followed by the intermediate.
//! `manifest.json` records what was generated; the driver reuses the data when it covers
//! the requested sizes. Key generation and signing run on every core (std threads).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType, PKCS_ECDSA_P256_SHA256,
};
use time::{Duration, OffsetDateTime};

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 {
        bail!("usage: bench-gen DATA_DIR N[,N...]   (e.g. bench/data 150,2103,10000,100000)");
    }
    let data = PathBuf::from(&args[1]);
    let mut ns: Vec<usize> = args[2]
        .split(',')
        .map(|s| {
            s.trim()
                .parse::<usize>()
                .with_context(|| format!("bad N {s:?}"))
        })
        .collect::<Result<_>>()?;
    ns.sort_unstable();
    ns.dedup();
    let max_n = *ns.last().context("no N given")?;
    if ns[0] == 0 {
        bail!("N must be at least 1");
    }

    let t0 = Instant::now();
    let now = OffsetDateTime::now_utc();
    let not_before = now - Duration::days(1);
    let not_after = now + Duration::days(3650);

    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let chunk = max_n.div_ceil(threads);
    let mut pems: Vec<String> = Vec::with_capacity(max_n);
    std::thread::scope(|s| -> Result<()> {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let lo = (t * chunk).min(max_n);
                let hi = ((t + 1) * chunk).min(max_n);
                s.spawn(move || -> Result<Vec<String>> {
                    (lo..hi)
                        .map(|i| ca_pem(i + 1, not_before, not_after))
                        .collect()
                })
            })
            .collect();
        for h in handles {
            let part = h
                .join()
                .map_err(|_| anyhow::anyhow!("generator thread panicked"))??;
            pems.extend(part);
        }
        Ok(())
    })?;
    let gen_s = t0.elapsed().as_secs_f64();

    let ca_dir = data.join("ca");
    let verify_dir = data.join("verify");
    fs::create_dir_all(&ca_dir)?;
    fs::create_dir_all(&verify_dir)?;

    let chain = make_chain(not_before, not_after)?;
    write(&verify_dir.join("root.pem"), chain.root.as_bytes())?;
    write(&verify_dir.join("intermediate.pem"), chain.inter.as_bytes())?;
    write(&verify_dir.join("leaf.pem"), chain.leaf.as_bytes())?;
    write(
        &verify_dir.join("chain.pem"),
        format!("{}{}", chain.leaf, chain.inter).as_bytes(),
    )?;

    for &n in &ns {
        let bundle: String = pems[..n].concat();
        write(&ca_dir.join(format!("bundle-{n}.pem")), bundle.as_bytes())?;

        let dir = ca_dir.join(format!("dir-{n}"));
        if dir.exists() {
            fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
        }
        fs::create_dir_all(&dir)?;
        for (i, pem) in pems[..n].iter().enumerate() {
            fs::write(dir.join(format!("ca-{:06}.pem", i + 1)), pem)
                .with_context(|| format!("writing into {}", dir.display()))?;
        }

        let roots = format!("{}{}", pems[..n - 1].concat(), chain.root);
        write(&verify_dir.join(format!("roots-{n}.pem")), roots.as_bytes())?;
    }

    let total_s = t0.elapsed().as_secs_f64();
    let manifest = serde_json::json!({
        "ns": ns,
        "max_n": max_n,
        "generated_at": now.unix_timestamp(),
        "not_after": not_after.unix_timestamp(),
        "threads": threads,
        "keys_and_certs_s": gen_s,
        "total_s": total_s,
    });
    write(
        &data.join("manifest.json"),
        serde_json::to_string_pretty(&manifest)?.as_bytes(),
    )?;
    eprintln!(
        "bench-gen: {max_n} P-256 CA keys+certs in {gen_s:.2} s on {threads} threads; \
         all files written in {total_s:.2} s"
    );
    Ok(())
}

/// Atomic write: temp file in the same directory, then rename.
fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension("tmp");
    let mut f = fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    f.write_all(bytes)?;
    f.sync_all().ok();
    fs::rename(&tmp, path).with_context(|| format!("renaming to {}", path.display()))?;
    Ok(())
}

fn ca_params(cn: &str, not_before: OffsetDateTime, not_after: OffsetDateTime) -> CertificateParams {
    let mut p = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, "tlskit bench");
    dn.push(DnType::CommonName, cn);
    p.distinguished_name = dn;
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    p.not_before = not_before;
    p.not_after = not_after;
    p
}

fn ca_pem(i: usize, not_before: OffsetDateTime, not_after: OffsetDateTime) -> Result<String> {
    let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)?;
    let params = ca_params(&format!("tlskit bench CA {i:06}"), not_before, not_after);
    Ok(params.self_signed(&key)?.pem())
}

struct Chain {
    root: String,
    inter: String,
    leaf: String,
}

fn make_chain(not_before: OffsetDateTime, not_after: OffsetDateTime) -> Result<Chain> {
    let root_key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)?;
    let root_params = ca_params("tlskit bench verification root", not_before, not_after);
    let root = root_params.self_signed(&root_key)?;
    let root_issuer = Issuer::new(root_params, &root_key);

    let inter_key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)?;
    let mut inter_params = ca_params(
        "tlskit bench verification intermediate",
        not_before,
        not_after,
    );
    inter_params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    inter_params.use_authority_key_identifier_extension = true;
    let inter = inter_params.signed_by(&inter_key, &root_issuer)?;
    let inter_issuer = Issuer::new(inter_params, &inter_key);

    let leaf_key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)?;
    let mut leaf_params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, "bench.example");
    leaf_params.distinguished_name = dn;
    leaf_params.subject_alt_names = vec![SanType::DnsName("bench.example".try_into()?)];
    leaf_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    leaf_params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    leaf_params.use_authority_key_identifier_extension = true;
    leaf_params.not_before = not_before;
    leaf_params.not_after = not_after;
    let leaf = leaf_params.signed_by(&leaf_key, &inter_issuer)?;

    Ok(Chain {
        root: root.pem(),
        inter: inter.pem(),
        leaf: leaf.pem(),
    })
}
