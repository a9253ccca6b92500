//! `seeds OUT_DIR`: write seed corpora for every fuzz target into OUT_DIR/<target>/ from
//! valid inputs made with rcgen (certificates valid 2020..2040, so they verify at the
//! harness's fixed time). Run by `scripts/fuzz-seeds`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::PathBuf;

use rcgen::{
    BasicConstraints, CertificateParams, CertificateRevocationListParams, DistinguishedName,
    DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyIdMethod, KeyPair, RevokedCertParams,
    SerialNumber, SignatureAlgorithm,
};

fn ymd(y: i32, m: u8, d: u8) -> time::OffsetDateTime {
    time::Date::from_calendar_date(y, time::Month::try_from(m).unwrap(), d)
        .unwrap()
        .midnight()
        .assume_utc()
}

fn params(cn: &str, ca: bool, sans: &[&str]) -> CertificateParams {
    let mut p =
        CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, cn);
    dn.push(DnType::OrganizationName, "tlskit fuzz");
    p.distinguished_name = dn;
    if ca {
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    } else {
        p.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
    }
    p.not_before = ymd(2020, 1, 1);
    p.not_after = ymd(2040, 1, 1);
    p
}

fn key(alg: &'static SignatureAlgorithm) -> KeyPair {
    KeyPair::generate_for(alg).unwrap_or_else(|_| KeyPair::generate().unwrap())
}

struct Out(PathBuf);
impl Out {
    fn put(&self, target: &str, name: &str, data: &[u8]) {
        let dir = self.0.join(target);
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join(name), data).unwrap();
    }
}

fn framed(ctl: u8, parts: &[&[u8]]) -> Vec<u8> {
    let mut v = vec![ctl];
    for p in parts {
        v.extend_from_slice(p);
    }
    v
}

fn main() {
    let dir = std::env::args().nth(1).expect("usage: seeds OUT_DIR");
    let out = Out(PathBuf::from(dir));
    let tmp = std::env::temp_dir().join(format!("tlskit-seeds-{}", std::process::id()));
    fs::create_dir_all(&tmp).unwrap();

    // A P-256 root, an intermediate, a leaf for the fuzz name, and CAs of other key types.
    let root_key = key(&rcgen::PKCS_ECDSA_P256_SHA256);
    let root_p = params("Fuzz Root", true, &[]);
    let root = root_p.self_signed(&root_key).unwrap();
    let root_issuer = Issuer::from_params(&root_p, &root_key);
    let int_key = key(&rcgen::PKCS_ECDSA_P384_SHA384);
    let int_p = params("Fuzz Intermediate", true, &[]);
    let int = int_p.signed_by(&int_key, &root_issuer).unwrap();
    let int_issuer = Issuer::from_params(&int_p, &int_key);
    let leaf_key = key(&rcgen::PKCS_ECDSA_P256_SHA256);
    let mut leaf_p = params(
        "fuzz.example",
        false,
        &[
            "fuzz.example",
            "*.fuzz.example",
            "xn--rksmrgs-5wao1o.example",
            "192.0.2.1",
        ],
    );
    leaf_p.serial_number = Some(SerialNumber::from(77u64));
    let leaf = leaf_p.signed_by(&leaf_key, &int_issuer).unwrap();
    let ed_key = key(&rcgen::PKCS_ED25519);
    let ed_root = params("Fuzz Ed25519 Root", true, &[])
        .self_signed(&ed_key)
        .unwrap();
    let rsa_key = key(&rcgen::PKCS_RSA_SHA256);
    let rsa_root = params("Fuzz RSA Root", true, &[])
        .self_signed(&rsa_key)
        .unwrap();
    let crl = CertificateRevocationListParams {
        this_update: ymd(2025, 1, 1),
        next_update: ymd(2030, 1, 1),
        crl_number: SerialNumber::from(1u64),
        issuing_distribution_point: None,
        revoked_certs: vec![RevokedCertParams {
            serial_number: SerialNumber::from(77u64),
            revocation_time: ymd(2025, 6, 1),
            reason_code: None,
            invalidity_date: None,
        }],
        key_identifier_method: KeyIdMethod::Sha256,
    }
    .signed_by(&int_issuer)
    .unwrap();
    let empty_crl = CertificateRevocationListParams {
        this_update: ymd(2025, 1, 1),
        next_update: ymd(2030, 1, 1),
        crl_number: SerialNumber::from(2u64),
        issuing_distribution_point: None,
        revoked_certs: vec![],
        key_identifier_method: KeyIdMethod::Sha256,
    }
    .signed_by(&int_issuer)
    .unwrap();
    let csr = params("fuzz.example", false, &["fuzz.example"])
        .serialize_request(&leaf_key)
        .unwrap();

    let (r, i, l) = (root.der().as_ref(), int.der().as_ref(), leaf.der().as_ref());
    let bundle = format!(
        "Fuzz bundle\n# comment\n{}\n{}junk between blocks\r\n{}{}",
        root.pem(),
        int.pem(),
        ed_root.pem(),
        rsa_root.pem().replace('\n', "\r\n")
    );

    // sources: PEM bundles, single DER, CRL, duplicates.
    out.put("sources", "root.pem", root.pem().as_bytes());
    out.put("sources", "root.der", r);
    out.put("sources", "bundle.pem", bundle.as_bytes());
    out.put(
        "sources",
        "dup.pem",
        format!("{}{}", root.pem(), root.pem()).as_bytes(),
    );
    out.put(
        "sources",
        "chain.pem",
        format!("{}{}", leaf.pem(), int.pem()).as_bytes(),
    );
    out.put("sources", "crl.pem", crl.pem().unwrap().as_bytes());
    out.put("sources", "crl.der", crl.der());

    // snapshots built by the store itself.
    let write_tmp = |name: &str, data: &[u8]| -> PathBuf {
        let p = tmp.join(name);
        fs::write(&p, data).unwrap();
        p
    };
    let bundle_path = write_tmp("bundle.pem", bundle.as_bytes());
    let root_path = write_tmp("root.pem", root.pem().as_bytes());
    for (name, srcs) in [
        ("one.snap", vec![root_path.clone()]),
        ("bundle.snap", vec![bundle_path.clone()]),
    ] {
        let snap = tmp.join(name);
        let sources: Vec<_> = srcs.into_iter().map(tlskit_store::Source::File).collect();
        tlskit_store::build_snapshot(&sources, &snap).unwrap();
        out.put("snapshot", name, &fs::read(&snap).unwrap());
    }

    // verify_chain: control byte, anchors, end entity, intermediates, [CRL].
    out.put("verify_chain", "valid", &framed(1, &[r, l, i]));
    out.put("verify_chain", "valid-noname", &framed(0x11, &[r, l, i]));
    out.put("verify_chain", "valid-client", &framed(0x09, &[r, l, i]));
    out.put(
        "verify_chain",
        "revoked",
        &framed(0x05, &[r, l, i, crl.der()]),
    );
    out.put(
        "verify_chain",
        "crl-ok",
        &framed(0x05, &[r, l, i, empty_crl.der()]),
    );
    out.put(
        "verify_chain",
        "two-anchors",
        &framed(2, &[ed_root.der(), r, l, i]),
    );
    out.put("verify_chain", "no-anchor", &framed(0, &[l, i]));
    out.put("verify_chain", "int-anchor", &framed(1, &[i, l]));
    out.put("verify_chain", "missing-int", &framed(1, &[r, l]));

    // pki_inspect: certificates, chains, requests, keys, CRLs, PEM and DER.
    out.put("pki_inspect", "leaf.pem", leaf.pem().as_bytes());
    out.put("pki_inspect", "leaf.der", l);
    out.put("pki_inspect", "chain.der", &[l, i, r].concat());
    out.put("pki_inspect", "bundle.pem", bundle.as_bytes());
    out.put("pki_inspect", "csr.pem", csr.pem().unwrap().as_bytes());
    out.put("pki_inspect", "csr.der", csr.der());
    out.put("pki_inspect", "crl.pem", crl.pem().unwrap().as_bytes());
    out.put("pki_inspect", "crl.der", crl.der());
    out.put(
        "pki_inspect",
        "key.pem",
        leaf_key.serialize_pem().as_bytes(),
    );
    out.put("pki_inspect", "ed.pem", ed_key.serialize_pem().as_bytes());
    out.put(
        "pki_inspect",
        "pub.pem",
        leaf_key.public_key_pem().as_bytes(),
    );
    out.put("pki_inspect", "rsa.pem", rsa_root.pem().as_bytes());

    // pki_p12: an archive made by tlskit's own export, password "fuzz".
    let kp = write_tmp("leaf.key", leaf_key.serialize_pem().as_bytes());
    let cp = write_tmp(
        "leaf-chain.pem",
        format!("{}{}", leaf.pem(), int.pem()).as_bytes(),
    );
    match tlskit_pki::p12::export(&kp, &cp, "fuzz") {
        Ok(p12) => out.put("pki_p12", "leaf.p12", &p12),
        Err(e) => eprintln!("seeds: p12 export failed: {e}"),
    }
    // The same with one iteration per key derivation: with the MAC stripped, the harness
    // decrypts every input, and at 10,000 iterations that is most of the time it spends.
    {
        use p12_keystore::{
            Certificate, KeyStore, KeyStoreEntry, LocalKeyId, PrivateKey, PrivateKeyChain,
        };
        let mut ks = KeyStore::new();
        ks.add_entry(
            "fuzz",
            KeyStoreEntry::PrivateKeyChain(PrivateKeyChain::new(
                LocalKeyId(vec![7; 20]),
                PrivateKey::from_der(&leaf_key.serialize_der()).unwrap(),
                vec![
                    Certificate::from_der(l).unwrap(),
                    Certificate::from_der(i).unwrap(),
                ],
            )),
        );
        let p12 = ks
            .writer("fuzz")
            .mac_iterations(1)
            .encryption_iterations(1)
            .write()
            .unwrap();
        out.put("pki_p12", "leaf-iter1.p12", &p12);
    }

    // names: reference and presented names.
    let names = [
        "fuzz.example",
        "*.fuzz.example",
        "FUZZ.Example.",
        "räksmörgås.example",
        "xn--rksmrgs-5wao1o.example",
        "例え.テスト",
        "ｅｘａｍｐｌｅ．com",
        "a\u{2024}b.example",
        "faß.de",
        "xn--fa-hia.de",
        "192.0.2.1",
        "[2001:db8::1]",
        "2001:db8::1",
        "a..b",
        "-a.example",
        "xn--.example",
        "xn--zz-.example",
        "a\u{200d}b.example",
    ];
    for (k, n) in names.iter().enumerate() {
        out.put("names", &format!("name-{k:02}"), n.as_bytes());
    }
    // probe_wire: first byte = mode (see tlskit_fuzz::probe_wire), then server bytes.
    let wire: [(&str, u8, &[u8]); 14] = [
        ("smtp-exim", 0, b"220 mail.test.example ESMTP Exim 4.96 Mon, 23 Nov 2026 10:39:39 +0000\r\n250-mail.test.example Hello tlskit.invalid [127.0.0.1]\r\n250-SIZE 52428800\r\n250-8BITMIME\r\n250-PIPELINING\r\n250-PIPECONNECT\r\n250-CHUNKING\r\n250-STARTTLS\r\n250-SMTPUTF8\r\n250 HELP\r\n220 TLS go ahead\r\n\x16\x03\x03"),
        ("smtp-no-starttls", 0, b"220-fake.example ESMTP\r\n220 ready\r\n250-fake.example\r\n250-PIPELINING\r\n250 8BITMIME\r\n"),
        ("smtp-refused", 0, b"220 hi\r\n250-x\r\n250 STARTTLS\r\n454 4.7.0 TLS not available\r\n"),
        ("smtp-bad-greeting", 0, b"554 go away\r\n"),
        ("imap", 1, b"* OK [CAPABILITY IMAP4rev1 STARTTLS LOGINDISABLED] Dovecot ready.\r\n* CAPABILITY IMAP4rev1\r\na1 OK Begin TLS negotiation now.\r\n"),
        ("imap-no", 1, b"* OK hi\r\na1 NO [ALERT] not now\r\n"),
        ("pop3", 2, b"+OK Dovecot ready.\r\n+OK Begin TLS negotiation now.\r\n"),
        ("pop3-err", 2, b"+OK hi\r\n-ERR no TLS\r\n"),
        ("smtp-endless", 3, b"250-PIPELINING\r\n"),
        ("imap-endless", 4, b"* OK untagged\r\n"),
        ("pop3-endless", 5, b"+OK\r"),
        ("replies", 6, b"220 a\r\n250-b\r\n250 c\r\n* x\r\na1 OK y\r\n+OK z\r\n"),
        ("ss", 7, b"ESTAB 0 0 127.0.0.1:41234 127.0.0.1:8443\n\t cubic wscale:7,7 rto:204 rtt:50.2/25 ato:40 mss:1448 pmtu:65535 rcvmss:1448 advmss:65483 cwnd:10 bytes_sent:517 bytes_received:27785 segs_out:5 segs_in:17 data_segs_out:3 data_segs_in:14"),
        ("events", 7, &[0x20, 0, 0, 1, 50, 40, 1, 1, 1, 1, 40, 40, 0, 1, 0, 1, 50, 1, 0xb5]),
    ];
    for (name, mode, bytes) in wire {
        let mut v = vec![mode];
        v.extend_from_slice(bytes);
        out.put("probe_wire", name, &v);
    }
    // config: `tlskit serve` configuration files (every key, the documented example,
    // the test suite's file, and TOML forms the parser must handle or refuse).
    let configs: [(&str, &str); 8] = [
        (
            "doc.toml",
            r#"listen = ["0.0.0.0:443", "[::]:443"]
cert = "/etc/tlskit/chain.pem"
key = "/etc/tlskit/key.pem"
sni_dir = "/etc/tlskit/sni"
backend = "127.0.0.1:8080"
client_ca = ["/etc/tlskit/clients.pem"]
compress = "brotli,zlib"
metrics = "127.0.0.1:9100"
handshake_timeout = 10
max_connections = 10000
"#,
        ),
        (
            "test.toml",
            r#"listen = ["127.0.0.1:0"]
cert = "chain.pem"
key = "leaf.key"
respond = "http"
compress = "zlib"
alpn = ["http/1.1"]
log_level = "debug"
"#,
        ),
        (
            "all.toml",
            r#"# every key
listen = [":8443", "localhost:9"]
cert = 'c.pem'
key = '''k.pem'''
sni_dir = "sni/"
respond = "echo"
client_ca = ["system", "ca.pem"]
client_auth = "optional"
ca_hints = "off"
compress = "none"
alpn = ["h2", "http/1.1"]
tls_version = ["1.2", "1.3"]
metrics = "[::1]:9100"
handshake_timeout = 2.5
idle_timeout = 1e3
max_connections = 0x10
shutdown_grace = 0.001
ticket_rotation = 3_600
proxy_protocol = true
no_watch = false
log_level = "warn"
"#,
        ),
        (
            "odd-floats.toml",
            "handshake_timeout = inf\nidle_timeout = nan\nshutdown_grace = -0.0\n",
        ),
        (
            "escapes.toml",
            r#"cert = "\u00e9t\u00e9/\U0001F512.pem"
key = """
multi\
  line"""
alpn = [
  "a", # c
  "b",
]
"#,
        ),
        ("unknown.toml", "lissen = 1\n"),
        (
            "tables.toml",
            r#"listen = [["a"], {x = 1}]
[table]
key = 1
[[arr]]
a.b.c = 1979-05-27T07:32:00Z
"#,
        ),
        ("empty.toml", ""),
    ];
    for (name, text) in configs {
        out.put("config", name, text.as_bytes());
    }
    // client_hello: [flags, cap, chunk, split] (see tlskit_fuzz::client_hello), then
    // the client's bytes: ClientHellos whole, split over records, declared too large,
    // cut short, two connections on one slot, what is not TLS, and nothing at all (a TCP
    // health check).
    let record = |body: &[u8]| {
        let mut r = vec![22, 3, 1];
        r.extend_from_slice(&u16::try_from(body.len()).unwrap().to_be_bytes());
        r.extend_from_slice(body);
        r
    };
    let hello = |len: usize| {
        let mut h = vec![1, 0, (len >> 8) as u8, len as u8];
        h.extend((0..len).map(|i| (i * 7) as u8));
        h
    };
    let h = hello(1800);
    let split3: Vec<u8> = [&h[..2], &h[2..1000], &h[1000..]]
        .iter()
        .flat_map(|p| record(p))
        .collect();
    let mut cut = record(&h);
    cut.pop();
    let mut two = cut.clone();
    two.extend(record(&h));
    let two_split = u8::try_from(cut.len() * 256 / two.len() + 1).unwrap();
    let mut big = record(&h[..4]);
    big[7] = 0xff;
    let hellos: [(&str, [u8; 4], Vec<u8>); 10] = [
        ("whole", [2, 255, 0, 0], record(&h)),
        ("whole-in-pieces", [2, 255, 13, 0], record(&h)),
        ("three-records", [4, 255, 0, 0], split3.clone()),
        ("cap-small", [2, 15, 0, 0], record(&h)),
        ("declared-large", [2, 255, 0, 0], big),
        ("cut-short", [2, 255, 100, 0], cut),
        ("no-budget", [0, 255, 0, 0], record(&h)),
        ("evict", [3, 255, 61, two_split], two),
        (
            "http",
            [2, 255, 0, 0],
            b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        ),
        ("closed-before-a-byte", [2, 255, 0, 0], Vec::new()),
    ];
    for (name, ctl, bytes) in hellos {
        let mut v = ctl.to_vec();
        v.extend_from_slice(&bytes);
        out.put("client_hello", name, &v);
    }
    // http_head: request heads the responder takes, and the smuggling shapes it refuses.
    let heads: [(&str, &[u8]); 10] = [
        ("get", b"GET / HTTP/1.1\r\nHost: example.test\r\nUser-Agent: curl/8.5.0\r\nAccept: */*\r\n\r\n"),
        ("post-length", b"POST /form HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\nConnection: keep-alive\r\n\r\nhello world"),
        ("chunked", b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"),
        ("cl-te", b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 44\r\nTransfer-Encoding: chunked\r\n\r\n"),
        ("te-not-last", b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked, identity\r\n\r\n"),
        ("cl-differ", b"POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n"),
        ("cl-list", b"POST / HTTP/1.1\r\nContent-Length: 5, 5\r\n\r\n"),
        ("fold", b"GET / HTTP/1.1\r\nX-A: a\r\n\tb\r\nHost: a\r\n\r\n"),
        ("space-colon", b"GET / HTTP/1.1\r\nTransfer-Encoding : chunked\r\n\r\n"),
        ("http10", b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n"),
    ];
    for (name, bytes) in heads {
        out.put("http_head", name, bytes);
    }
    // pkcs11_uri: RFC 7512 examples and the forms the parser refuses.
    let uris: [(&str, &str); 8] = [
        ("rfc-token", "pkcs11:token=The%20Software%20PKCS%2311%20Softtoken;manufacturer=Snake%20Oil,%20Inc.;model=1.0;object=my-certificate;type=cert;id=%69%95%3E%5C%F4%BD%EC%91;serial="),
        ("module", "pkcs11:slot-id=0;object=key?module-path=/usr/lib/softhsm/libsofthsm2.so&module-name=softhsm2"),
        ("pin-source", "pkcs11:token=t;object=k?pin-source=file:///run/tlskit/pin"),
        ("pin-value", "pkcs11:token=t;id=%01?pin-value=123456"),
        ("library", "pkcs11:library-manufacturer=OpenSC%20Project;library-description=x;library-version=1;token=a;x-vendor=1"),
        ("both-pins", "pkcs11:token=a?pin-value=1&pin-source=/p"),
        ("bad-hex", "pkcs11:object=%zz;token=%e9"),
        ("nothing", "PKCS11:manufacturer=x"),
    ];
    for (name, uri) in uris {
        out.put("pkcs11_uri", name, uri.as_bytes());
    }
    let _ = fs::remove_dir_all(&tmp);
    eprintln!("seeds: wrote corpora under {}", out.0.display());
}
