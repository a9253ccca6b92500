//! Certificate tooling: `key`, `csr`, `cert`, `ca`, `show`, `lint`, `p12`.
//! Parsing and output only; the work is in `tlskit_pki`.

use std::path::{Path, PathBuf};

use anyhow::Context;
use tlskit_pki::ca::{self, Profile};
use tlskit_pki::inspect::{self, Item};
use tlskit_pki::key::KeyType;
use tlskit_pki::lint::{self, Severity};
use tlskit_pki::{cert, key, p12};

use crate::output::{bounded, print_json, warn, CmdResult, Escaped, Outcome, Style};

/// `tlskit key` subcommands.
#[derive(clap::Subcommand)]
pub(crate) enum KeyCmd {
    /// Generate a private key (PKCS#8 PEM, written atomically with mode 0600).
    #[command(
        after_help = "Examples:\n  tlskit key new -o server.key\n  tlskit key new --type rsa3072 -o legacy.key\n  tlskit key new --type ed25519 -o ed.key --force\n  TLSKIT_PKCS11_PIN=... tlskit key new --pkcs11 'pkcs11:token=web;object=tls?module-path=/usr/lib/softhsm/libsofthsm2.so'\n\nThe key is never printed; an existing file is only replaced with --force (the old one is kept as FILE.bak).\nWith --pkcs11 the key is generated on the token (p256, p384, rsa2048, rsa3072), never extractable;\nan existing key with that label or id is never replaced."
    )]
    New {
        /// Key type: p256, p384, ed25519, rsa2048, rsa3072 or rsa4096.
        #[arg(long = "type", default_value = "p256", value_name = "TYPE", value_parser = super::offer(&KeyType::ALL.map(KeyType::name), |s: &str| s.parse::<KeyType>()), hide_possible_values = true)]
        key_type: KeyType,
        /// Where to write the key.
        #[arg(
            short = 'o',
            long = "out",
            value_name = "FILE",
            required_unless_present = "pkcs11"
        )]
        out: Option<PathBuf>,
        /// Generate the key on the PKCS#11 token this URI names (object=LABEL names the key).
        #[arg(long, value_name = "URI", conflicts_with = "out")]
        pkcs11: Option<String>,
        /// Replace an existing file (keeping it as FILE.bak).
        #[arg(long)]
        force: bool,
    },
}

/// Subject and SANs shared by `csr new` and `cert self-sign`.
#[derive(clap::Args)]
pub(crate) struct NameArgs {
    /// Subject DN, most specific first: "CN=example.com,O=Example,C=SE" (escape a comma as \,)
    /// or OpenSSL's "/C=SE/O=Example/CN=example.com".
    #[arg(long, value_name = "DN")]
    subject: String,
    /// A subjectAltName: dns:NAME, ip:ADDR or email:ADDR (repeatable). Internationalized
    /// names are converted to A-labels; look-alike dots such as U+2024 are refused.
    /// Without any --san a CN that is a host name becomes the only SAN.
    #[arg(long = "san", value_name = "TYPE:VALUE")]
    sans: Vec<String>,
}

/// `tlskit csr` subcommands.
#[derive(clap::Subcommand)]
pub(crate) enum CsrCmd {
    /// Create a certificate signing request (PKCS#10 PEM) signed by KEY.
    #[command(
        after_help = "Examples:\n  tlskit csr new --key server.key --subject 'CN=www.example.com,O=Example,C=SE' \\\n      --san dns:www.example.com --san dns:example.com -o server.csr\n  tlskit csr new --key k.pem --subject 'CN=räksmörgås.se' --san 'dns:räksmörgås.se' -o idn.csr\n  tlskit csr new --key k.pem --subject 'CN=api' --san ip:192.0.2.10 -o api.csr"
    )]
    New {
        /// The private key that signs the request (a file, or a pkcs11: URI).
        #[arg(long, value_name = "FILE")]
        key: PathBuf,
        #[command(flatten)]
        names: NameArgs,
        /// Where to write the request.
        #[arg(short = 'o', long = "out", value_name = "FILE")]
        out: PathBuf,
        /// Replace an existing file.
        #[arg(long)]
        force: bool,
    },
}

/// `tlskit cert` subcommands.
#[derive(clap::Subcommand)]
pub(crate) enum CertCmd {
    /// Create a self-signed certificate.
    #[command(
        name = "self-sign",
        after_help = "Examples:\n  tlskit cert self-sign --key k.pem --subject CN=localhost --san dns:localhost --san ip:127.0.0.1 -o cert.pem\n  tlskit cert self-sign --key ca.key --subject 'CN=Test Root' --ca --days 3650 -o root.pem"
    )]
    SelfSign {
        /// The private key (it signs and is certified): a file, or a pkcs11: URI.
        #[arg(long, value_name = "FILE")]
        key: PathBuf,
        #[command(flatten)]
        names: NameArgs,
        /// Validity in days (default 90, or 3650 with --ca).
        #[arg(long)]
        days: Option<u32>,
        /// Make a CA certificate (CA:TRUE, keyCertSign, cRLSign) instead of a TLS leaf.
        #[arg(long)]
        ca: bool,
        /// Where to write the certificate.
        #[arg(short = 'o', long = "out", value_name = "FILE")]
        out: PathBuf,
        /// Replace an existing file.
        #[arg(long)]
        force: bool,
    },
}

/// `tlskit ca` subcommands.
#[derive(clap::Subcommand)]
pub(crate) enum CaCmd {
    /// Serve an RFC 8555 ACME server on this CA (http-01, tls-alpn-01, profiles, EAB).
    #[command(
        after_help = "Examples:\n  tlskit ca serve ./myca --listen 127.0.0.1:14000\n  tlskit ca serve ./myca --listen 0.0.0.0:443 --metrics 127.0.0.1:9101\n  tlskit ca serve ./myca --listen 127.0.0.1:14000 --validation-http-port 5002 --validation-tls-port 5001\n\nThe directory is https://ADDR/directory, served with a certificate the CA issues to itself\nfor 127.0.0.1 and localhost (clients trust DIR/ca.pem). Profiles, EAB and limits are in\nDIR/acme.toml (see the tlskit-ca-server README); state is kept in DIR/acme/."
    )]
    Serve(super::ca_serve::ServeArgs),
    /// External account binding keys of the ACME server.
    #[command(subcommand)]
    Eab(super::ca_serve::EabCmd),
    /// Create a CA in a new directory: ca.key (0600), ca.pem, serial, index.jsonl.
    #[command(
        after_help = "Examples:\n  tlskit ca init ./myca --subject 'CN=Example Root CA,O=Example'\n  tlskit ca init ./lab --type p384 --path-len 0 --permit-dns example.com --permit-dns example.net\n  tlskit ca init ./sub --parent ./myca --subject 'CN=Example Issuing CA'   # an intermediate\n  tlskit ca init ./pki --crl-url http://pki.example/ca.crl   # every certificate names its CRL\n\n--permit-dns example.com allows example.com and every name below it; .example.com only names below it."
    )]
    Init {
        /// The CA directory (must not exist, or be empty).
        dir: PathBuf,
        /// Subject DN of the CA (default: "CN=tlskit CA <random>,O=tlskit").
        #[arg(long, value_name = "DN")]
        subject: Option<String>,
        /// Key type: p256, p384, ed25519, rsa2048, rsa3072 or rsa4096.
        #[arg(long = "type", default_value = "p256", value_name = "TYPE", value_parser = super::offer(&KeyType::ALL.map(KeyType::name), |s: &str| s.parse::<KeyType>()), hide_possible_values = true)]
        key_type: KeyType,
        /// basicConstraints pathLenConstraint (how many intermediates may follow).
        #[arg(long, value_name = "N")]
        path_len: Option<u8>,
        /// Permit only this DNS subtree (name constraints; repeatable).
        #[arg(long = "permit-dns", value_name = "DOMAIN")]
        permit_dns: Vec<String>,
        /// Validity in days.
        #[arg(long, default_value_t = 3650)]
        days: u32,
        /// Make an intermediate CA issued by the CA in this directory.
        #[arg(long, value_name = "DIR")]
        parent: Option<PathBuf>,
        /// Use this key on a PKCS#11 token (a pkcs11: URI) instead of generating ca.key;
        /// the directory then stores the URI (never a PIN) in ca.pkcs11.
        #[arg(long, value_name = "URI", conflicts_with = "key_type")]
        key: Option<String>,
        /// Default CRL distribution point (http:// or https://) of every certificate this
        /// CA issues; kept in DIR/crl-url (edit or remove that file to change it).
        #[arg(long, value_name = "URL")]
        crl_url: Option<String>,
    },
    /// Issue a certificate for a request; writes the certificate followed by the chain
    /// up to (not including) the root.
    #[command(
        after_help = "Examples:\n  tlskit ca issue ./myca --csr server.csr -o server.pem\n  tlskit ca issue ./myca --csr client.csr --profile client --days 30 -o client.pem\n  tlskit ca issue ./myca --csr sub.csr --profile intermediate -o sub.pem\n  tlskit ca issue ./myca --csr server.csr --crl-url http://pki.example/ca.crl -o server.pem\n\nThe request's self-signature is verified and its subjectAltNames are kept; names outside\nthe CA's name constraints are refused. Serial numbers are random, checked against the\nindex under a lock, and never reused, also when several issues run at once."
    )]
    Issue {
        /// The CA directory.
        dir: PathBuf,
        /// The certificate signing request (PEM or DER).
        #[arg(long, value_name = "FILE")]
        csr: PathBuf,
        /// Validity in days (default 90 for server/client, 1825 for intermediate).
        #[arg(long)]
        days: Option<u32>,
        /// server (serverAuth), client (clientAuth) or intermediate (a sub-CA).
        #[arg(long, default_value = "server", value_parser = super::offer(&["server", "client", "intermediate"], |s: &str| s.parse::<Profile>()), hide_possible_values = true)]
        profile: Profile,
        /// pathLenConstraint for --profile intermediate (default 0).
        #[arg(long, value_name = "N")]
        path_len: Option<u8>,
        /// Where to write the certificate and chain.
        #[arg(short = 'o', long = "out", value_name = "FILE")]
        out: PathBuf,
        /// Replace an existing file.
        #[arg(long)]
        force: bool,
        /// CRL distribution point (http:// or https://) to put in the certificate
        /// (default: the CA's, from `ca init --crl-url`).
        #[arg(long, value_name = "URL")]
        crl_url: Option<String>,
        /// Print the index entry as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Revoke a certificate this CA issued: recorded in its index (under the CA's lock);
    /// publish it with `tlskit ca crl`.
    #[command(
        after_help = "Examples:\n  tlskit ca revoke ./myca --serial 5c:3a:9f:01 --reason keyCompromise\n  tlskit ca revoke ./myca --cert server.pem --reason superseded --json\n  tlskit ca crl ./myca -o crl.pem\n\n--serial takes hex as `ca list` and `show` print it, with or without colons or a\nleading 00. --reason: 0 unspecified (default), 1 keyCompromise, 3 affiliationChanged,\n4 superseded, 5 cessationOfOperation (the codes and names of `acme revoke --reason`).\nExit 0: revoked now; 1: it was already revoked (nothing recorded; the first reason and\ndate are shown); 2: an error, such as a serial this CA never issued. Revoking needs no\naccess to the CA key (no PIN for a token CA). JSON: schema tlskit.ca.revoke/1."
    )]
    #[command(group(clap::ArgGroup::new("which").required(true).args(["serial", "cert"])))]
    Revoke {
        /// The CA directory.
        dir: PathBuf,
        /// Serial number of the certificate (hex).
        #[arg(long, value_name = "HEX")]
        serial: Option<String>,
        /// The certificate (PEM or DER; the first of the file): it must be the one the CA's
        /// index holds for its serial.
        #[arg(long, value_name = "FILE")]
        cert: Option<PathBuf>,
        /// Why (code or name; default unspecified).
        #[arg(long, value_name = "REASON", value_parser = super::reason_parser(), hide_possible_values = true)]
        reason: Option<tlskit_x509::RevocationReason>,
        /// Print JSON (schema tlskit.ca.revoke/1, docs/json.md).
        #[arg(long)]
        json: bool,
    },
    /// Write a CRL of every certificate this CA revoked (RFC 5280 v2: CRLNumber,
    /// authorityKeyIdentifier, reason codes), signed by the CA key.
    #[command(
        after_help = "Examples:\n  tlskit ca crl ./myca -o crl.pem\n  tlskit ca crl ./myca -o /srv/www/pki/ca.crl --der --next-update 1\n  openssl crl -in crl.pem -noout -text\n\nEach run takes the next CRLNumber (kept in DIR/crlnumber) and replaces FILE atomically.\nServe it at the URL given to `ca init --crl-url` / `ca issue --crl-url`, and run this\nagain before --next-update days pass (clients refuse an expired CRL).\n\nExit status: 0 written, 2 error (FILE left as it was). JSON: schema tlskit.ca.crl/1."
    )]
    Crl {
        /// The CA directory.
        dir: PathBuf,
        /// Where to write the CRL (replaced atomically).
        #[arg(short = 'o', long = "out", value_name = "FILE")]
        out: PathBuf,
        /// Days until nextUpdate (1 to 365).
        #[arg(long, value_name = "DAYS", default_value_t = 7, value_parser = clap::value_parser!(u32).range(1..=365))]
        next_update: u32,
        /// Write DER instead of PEM.
        #[arg(long)]
        der: bool,
        /// Print JSON (schema tlskit.ca.crl/1, docs/json.md).
        #[arg(long)]
        json: bool,
    },
    /// List what a CA issued (its index).
    #[command(after_help = "Examples:\n  tlskit ca list ./myca\n  tlskit ca list ./myca --json")]
    List {
        /// The CA directory.
        dir: PathBuf,
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
}

/// Where the PKCS#12 password comes from.
#[derive(clap::Args)]
pub(crate) struct PasswordArgs {
    /// Read the password from the first line of this file.
    #[arg(long, value_name = "FILE")]
    password_file: Option<PathBuf>,
    /// Read the password from this environment variable.
    #[arg(long, value_name = "VAR", default_value = "TLSKIT_P12_PASSWORD")]
    password_env: String,
}

impl PasswordArgs {
    fn get(&self) -> anyhow::Result<String> {
        if let Some(f) = &self.password_file {
            // A password file is one line: 64 KiB is plenty, and a FIFO or device is
            // refused rather than waited on.
            let text =
                tlskit_io::read_to_string(f, 64 << 10).context("cannot read the password file")?;
            return Ok(text.lines().next().unwrap_or("").to_string());
        }
        match std::env::var(&self.password_env) {
            Ok(p) => Ok(p),
            Err(std::env::VarError::NotUnicode(_)) => {
                anyhow::bail!("${} is not valid UTF-8", self.password_env)
            }
            Err(_) => anyhow::bail!(
                "no password: set ${} or use --password-file FILE (passwords are not taken on the command line)",
                self.password_env
            ),
        }
    }
}

/// `tlskit p12` subcommands.
#[derive(clap::Subcommand)]
pub(crate) enum P12Cmd {
    /// Write a PKCS#12 file (AES-256-CBC, PBKDF2, HMAC-SHA256 MAC; OpenSSL 3 reads it).
    #[command(
        after_help = "Examples:\n  TLSKIT_P12_PASSWORD=... tlskit p12 export --key server.key --cert server.pem -o server.p12\n  tlskit p12 export --key k.pem --cert chain.pem --password-file pw.txt -o bundle.p12\n\n--cert may hold the chain (leaf first); the key must match the first certificate."
    )]
    Export {
        /// The private key.
        #[arg(long, value_name = "FILE")]
        key: PathBuf,
        /// The certificate, optionally followed by its chain.
        #[arg(long, value_name = "FILE")]
        cert: PathBuf,
        /// Where to write the PKCS#12 file (mode 0600).
        #[arg(short = 'o', long = "out", value_name = "FILE")]
        out: PathBuf,
        #[command(flatten)]
        password: PasswordArgs,
        /// Replace an existing file.
        #[arg(long)]
        force: bool,
    },
    /// Read a PKCS#12 file into a key file (0600) and a certificate file (leaf first).
    #[command(
        after_help = "Examples:\n  TLSKIT_P12_PASSWORD=... tlskit p12 import server.p12 --key-out server.key --cert-out server.pem\n  tlskit p12 import bundle.p12 --password-file pw.txt --key-out k.pem --cert-out c.pem\n\nReads files from OpenSSL 3 (`openssl pkcs12 -export`); legacy RC2/3DES files are refused."
    )]
    Import {
        /// The PKCS#12 file.
        file: PathBuf,
        /// Where to write the private key.
        #[arg(long, value_name = "FILE")]
        key_out: PathBuf,
        /// Where to write the certificates.
        #[arg(long, value_name = "FILE")]
        cert_out: PathBuf,
        #[command(flatten)]
        password: PasswordArgs,
        /// Replace existing files.
        #[arg(long)]
        force: bool,
        /// Refuse a file that asks for more than N iterations in one key derivation
        /// (PBKDF2 or MAC), before doing any: the file sets its own cost.
        #[arg(long, value_name = "N", default_value_t = p12::DEFAULT_MAX_ITERATIONS)]
        max_iterations: u32,
    },
}

/// Arguments of `tlskit show`.
#[derive(clap::Args)]
#[command(
    after_help = "Examples:\n  tlskit show server.pem\n  tlskit show chain.pem --json | jq '.certificates[0].sans'\n  tlskit show server.key     # only the public half: type, size, fingerprint\n  tlskit show request.csr crl.der\n\nPEM or DER is detected. JSON: one object (schema tlskit.show/1) with an array per kind:\ncertificates, requests, public_keys, private_keys, crls, input_errors (docs/json.md)."
)]
pub(crate) struct ShowArgs {
    /// Files: certificates, chains, requests, public keys, private keys, CRLs.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// JSON output.
    #[arg(long)]
    json: bool,
}

/// Arguments of `tlskit lint`.
#[derive(clap::Args)]
#[command(
    after_help = "Examples:\n  tlskit lint server.pem\n  tlskit lint fullchain.pem --json\n\nExit status: 0 clean (info findings only), 1 warnings or errors found, 2 unreadable input.\nNames are checked against the name constraints of issuers found in the same file."
)]
pub(crate) struct LintArgs {
    /// Certificate, chain (leaf first) or request.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// JSON output.
    #[arg(long)]
    json: bool,
}

fn note(msg: &str) {
    eprintln!("tlskit: {}", bounded(msg));
}

/// Said once when another process holds a CA's lock (`ca issue`, `ca init --parent`).
fn say_lock_wait(lock: &Path) {
    note(&format!(
        "waiting for the CA lock {} (another process is issuing from this CA; at most {} s)",
        lock.display(),
        ca::LOCK_WAIT.as_secs()
    ));
}

pub(crate) fn key(c: KeyCmd) -> CmdResult {
    match c {
        KeyCmd::New {
            key_type,
            out,
            pkcs11,
            force,
        } => {
            let Some(out) = out else {
                let uri = pkcs11.unwrap_or_default();
                return crate::cmd::pkcs11::key_new(&uri, key_type);
            };
            key::generate_to_file(key_type, &out, force)?;
            println!(
                "wrote a new {key_type} private key to {} (mode 0600)",
                out.display()
            );
            Ok(Outcome::Success)
        }
    }
}

fn names(n: &NameArgs) -> anyhow::Result<cert::Names> {
    let names = cert::names(&n.subject, &n.sans)?;
    if let Some((typed, written)) = &names.cn_as_a_label {
        note(&format!(
            "CN {typed:?} written as its A-labels {written:?}, as in the subjectAltName \
             (certificates carry A-labels; `tlskit show` prints both forms)"
        ));
    }
    if names.san_from_cn {
        note("no --san given: using the CN as the only subjectAltName");
    } else if names.sans.is_empty() {
        note("warning: no subjectAltName: TLS clients will not accept this for any host name");
    }
    Ok(names)
}

pub(crate) fn csr(c: CsrCmd) -> CmdResult {
    match c {
        CsrCmd::New {
            key,
            names: n,
            out,
            force,
        } => {
            tlskit_pki::fsx::check_absent(&out, force)?;
            let kp = key::load_signing(&key)?;
            let names = names(&n)?;
            let pem = cert::csr_pem(&kp, &names).map_err(|e| kp.explain(e))?;
            tlskit_pki::fsx::write_atomic(&out, pem.as_bytes(), false, force)?;
            println!("wrote a certificate request to {}", out.display());
            Ok(Outcome::Success)
        }
    }
}

pub(crate) fn cert(c: CertCmd) -> CmdResult {
    match c {
        CertCmd::SelfSign {
            key,
            names: n,
            days,
            ca,
            out,
            force,
        } => {
            tlskit_pki::fsx::check_absent(&out, force)?;
            let kp = key::load_signing(&key)?;
            let names = names(&n)?;
            let days = days.unwrap_or(if ca { 3650 } else { 90 });
            if days == 0 {
                anyhow::bail!("--days must be at least 1");
            }
            let pem = cert::self_signed_pem(&kp, &names, days, ca).map_err(|e| kp.explain(e))?;
            tlskit_pki::fsx::write_atomic(&out, pem.as_bytes(), false, force)?;
            println!("wrote a self-signed certificate to {}", out.display());
            Ok(Outcome::Success)
        }
    }
}

pub(crate) fn ca(c: CaCmd) -> CmdResult {
    match c {
        CaCmd::Serve(a) => super::ca_serve::serve(a),
        CaCmd::Eab(e) => super::ca_serve::eab(e),
        CaCmd::Init {
            dir,
            subject,
            key_type,
            path_len,
            permit_dns,
            days,
            parent,
            key,
            crl_url,
        } => {
            let opts = ca::InitOptions::new()
                .crl_url(crl_url)
                .subject(subject)
                .key_type(key_type)
                .path_len(path_len)
                .permit_dns(permit_dns)
                .days(days)
                .parent(parent)
                .on_lock_wait(Some(say_lock_wait))
                .token_key(key);
            ca::init(&dir, &opts)?;
            println!(
                "created CA in {} (ca.pem is the certificate to trust{})",
                dir.display(),
                if opts.parent.is_some() {
                    "; chain.pem leads to its root"
                } else {
                    ""
                }
            );
            Ok(Outcome::Success)
        }
        CaCmd::Issue {
            dir,
            csr,
            days,
            profile,
            path_len,
            out,
            force,
            crl_url,
            json,
        } => {
            if days == Some(0) {
                anyhow::bail!("--days must be at least 1");
            }
            if let Some(u) = &crl_url {
                ca::check_crl_url(u).map_err(|e| anyhow::anyhow!("--crl-url: {e}"))?;
            }
            let opts = ca::IssueOptions::new()
                .crl_url(crl_url)
                .days(days)
                .profile(profile)
                .path_len(path_len)
                .on_lock_wait(Some(say_lock_wait));
            let entry = ca::issue_to_file(&dir, &csr, &opts, &out, force)?;
            if json {
                print_json(&entry)?;
            } else {
                println!(
                    "issued serial {} for {} [{}] until {} -> {}",
                    tlskit_x509::text::serial_from_hex(&entry.serial),
                    Escaped(&entry.subject),
                    Escaped(&summarize_names(&entry.sans)),
                    entry.not_after,
                    out.display()
                );
            }
            Ok(Outcome::Success)
        }
        CaCmd::Revoke {
            dir,
            serial,
            cert,
            reason,
            json,
        } => ca_revoke(&dir, serial.as_deref(), cert.as_deref(), reason, json),
        CaCmd::Crl {
            dir,
            out,
            next_update,
            der,
            json,
        } => {
            let ca = ca::Ca::open(&dir)?;
            let s = ca.write_crl(
                &out,
                std::time::Duration::from_secs(u64::from(next_update) * 86_400),
                der,
            )?;
            if json {
                print_json(&CrlJson {
                    ca: dir.display().to_string(),
                    out: out.display().to_string(),
                    format: if der { "der" } else { "pem" },
                    summary: &s,
                })?;
            } else {
                println!(
                    "wrote CRL number {} listing {} revoked certificate(s), next update {} -> {}",
                    s.number,
                    s.revoked,
                    s.next_update,
                    Escaped(&out.display().to_string())
                );
            }
            Ok(Outcome::Success)
        }
        CaCmd::List { dir, json } => {
            let idx = ca::index(&dir)?;
            if json {
                // `issued`: the index entries (before schema 1 the document was this array).
                print_json(&serde_json::json!({
                    "ca": dir.display().to_string(),
                    "count": idx.len(),
                    "issued": idx,
                }))?;
            } else {
                // Every field is the index file's text: escaped before the terminal.
                let esc = tlskit_x509::text::escape;
                for e in &idx {
                    let revoked = match (&e.revocation_reason, &e.revoked_at) {
                        (Some(r), Some(at)) => format!("  REVOKED {} ({r})", esc(at)),
                        _ => String::new(),
                    };
                    println!(
                        "{}  {}  {:<12}  {}  [{}]{revoked}",
                        esc(&tlskit_x509::text::serial_from_hex(&e.serial)),
                        esc(&e.not_after),
                        esc(&e.profile),
                        Escaped(&e.subject),
                        Escaped(&summarize_names(&e.sans))
                    );
                }
            }
            Ok(Outcome::Success)
        }
    }
}

/// `ca crl --json`.
#[derive(serde::Serialize)]
struct CrlJson<'a> {
    ca: String,
    out: String,
    format: &'static str,
    #[serde(flatten)]
    summary: &'a ca::CrlSummary,
}

/// `ca revoke --json`.
#[derive(serde::Serialize)]
struct RevokeJson {
    ca: String,
    serial: String,
    /// Recorded by this run (false: it was revoked before).
    revoked: bool,
    already_revoked: bool,
    reason: tlskit_x509::RevocationReason,
    reason_code: u8,
    revoked_at: String,
}

fn ca_revoke(
    dir: &Path,
    serial: Option<&str>,
    cert: Option<&Path>,
    reason: Option<tlskit_x509::RevocationReason>,
    json: bool,
) -> CmdResult {
    let reason = reason.unwrap_or_default();
    let now = std::time::SystemTime::now();
    let result = match (serial, cert) {
        (Some(s), _) => {
            let s = ca::parse_serial(s).map_err(|e| anyhow::anyhow!("--serial: {e}"))?;
            ca::revoke(dir, &s, reason, now, Some(say_lock_wait))
        }
        (None, Some(c)) => {
            let certs = tlskit_verify::load_certs(c)?;
            let first = certs
                .first()
                .ok_or_else(|| anyhow::anyhow!("{}: no certificate", c.display()))?;
            ca::revoke_certificate(dir, first, reason, now, Some(say_lock_wait))
        }
        (None, None) => anyhow::bail!("give --serial HEX or --cert FILE"),
    };
    let (doc, outcome) = match result {
        Ok(r) => (
            RevokeJson {
                ca: dir.display().to_string(),
                serial: r.serial,
                revoked: true,
                already_revoked: false,
                reason: r.reason,
                reason_code: r.reason.code(),
                revoked_at: r.revoked_at,
            },
            Outcome::Success,
        ),
        Err(tlskit_pki::PkiError::AlreadyRevoked {
            serial,
            reason,
            revoked_at,
        }) => (
            RevokeJson {
                ca: dir.display().to_string(),
                serial,
                revoked: false,
                already_revoked: true,
                reason,
                reason_code: reason.code(),
                revoked_at,
            },
            Outcome::Negative,
        ),
        Err(e) => return Err(e.into()),
    };
    if json {
        print_json(&doc)?;
    } else if doc.revoked {
        println!(
            "revoked serial {} ({}) at {}; publish it with `tlskit ca crl {} -o FILE`",
            doc.serial,
            doc.reason,
            doc.revoked_at,
            Escaped(&dir.display().to_string())
        );
    } else {
        println!(
            "serial {} was already revoked ({}) at {}; nothing recorded",
            doc.serial, doc.reason, doc.revoked_at
        );
    }
    Ok(outcome)
}

pub(crate) fn p12(c: P12Cmd) -> CmdResult {
    match c {
        P12Cmd::Export {
            key,
            cert,
            out,
            password,
            force,
        } => {
            if key.to_str().is_some_and(tlskit_pkcs11::is_uri) {
                anyhow::bail!(
                    "--key: a key on a PKCS#11 token cannot be exported (it never leaves the token)"
                );
            }
            let pw = password.get()?;
            if pw.is_empty() {
                anyhow::bail!("refusing to write a PKCS#12 file with an empty password");
            }
            p12::export_to_file(&key, &cert, &pw, &out, force)?;
            println!("wrote {} (mode 0600)", out.display());
            Ok(Outcome::Success)
        }
        P12Cmd::Import {
            file,
            key_out,
            cert_out,
            password,
            force,
            max_iterations,
        } => {
            let pw = password.get()?;
            let limits = p12::P12Limits::default().max_iterations(max_iterations);
            let imp =
                p12::import_to_files_with_limits(&file, &pw, &key_out, &cert_out, force, &limits)?;
            println!(
                "wrote the private key to {} (mode 0600) and {} certificate(s) to {}",
                key_out.display(),
                imp.certs.len(),
                cert_out.display()
            );
            Ok(Outcome::Success)
        }
    }
}

/// A file that could not be read or parsed, in a `--json` document of `show` or `lint`.
#[derive(serde::Serialize)]
struct InputError {
    path: String,
    message: String,
}

/// One item of `show --json`: where it came from, then its own fields.
#[derive(serde::Serialize)]
struct Located<'a, T> {
    /// The file it was read from.
    path: String,
    /// Its position among the items of that file, from 1.
    index: usize,
    #[serde(flatten)]
    item: &'a T,
}

/// `show --json` (schema tlskit.show/1): one array per kind of item, every array present
/// whatever the input (before schema 1: one bare object for one item, an array for several).
#[derive(serde::Serialize, Default)]
struct ShowDoc<'a> {
    certificates: Vec<Located<'a, inspect::CertInfo>>,
    requests: Vec<Located<'a, inspect::RequestInfo>>,
    public_keys: Vec<Located<'a, inspect::PublicKeyInfo>>,
    private_keys: Vec<Located<'a, inspect::PrivateKeyInfo>>,
    crls: Vec<Located<'a, inspect::CrlInfo>>,
    /// PEM blocks that were skipped and files that could not be read.
    input_errors: Vec<InputError>,
}

pub(crate) fn show(a: ShowArgs) -> CmdResult {
    let mut items = Vec::new();
    let input_errors = per_file(&a.files, inspect::describe, |f, d, input_errors| {
        for (n, why) in &d.problems {
            warn(f, &format!("PEM block #{n}: {why}"));
            input_errors.push(InputError {
                path: f.display().to_string(),
                message: format!("PEM block #{n}: {why}"),
            });
        }
        items.extend(
            d.items
                .into_iter()
                .enumerate()
                .map(|(n, i)| (f.to_path_buf(), n + 1, i)),
        );
    })?;
    if items.is_empty() {
        anyhow::bail!("nothing could be shown");
    }
    if a.json {
        let mut doc = ShowDoc {
            input_errors,
            ..ShowDoc::default()
        };
        for (path, index, item) in &items {
            let path = path.display().to_string();
            let index = *index;
            match item {
                Item::Certificate(c) => doc.certificates.push(Located {
                    path,
                    index,
                    item: &**c,
                }),
                Item::Request(r) => doc.requests.push(Located {
                    path,
                    index,
                    item: r,
                }),
                Item::PublicKey(k) => doc.public_keys.push(Located {
                    path,
                    index,
                    item: k,
                }),
                Item::PrivateKey(k) => doc.private_keys.push(Located {
                    path,
                    index,
                    item: k,
                }),
                Item::Crl(c) => doc.crls.push(Located {
                    path,
                    index,
                    item: c,
                }),
                _ => {}
            }
        }
        print_json(&doc)?;
    } else {
        let style = Style::stdout();
        let many = items.len() > 1;
        let mut out = String::new();
        for (n, (path, _, item)) in items.iter().enumerate() {
            if n > 0 {
                out.push('\n');
            }
            human_item(&mut out, style, path, item, many.then_some(n + 1));
        }
        use std::io::Write;
        std::io::stdout().lock().write_all(out.as_bytes())?;
    }
    Ok(Outcome::Success)
}

fn colon_hex(h: &str) -> String {
    h.as_bytes()
        .chunks(2)
        .map(|c| String::from_utf8_lossy(c).to_uppercase())
        .collect::<Vec<_>>()
        .join(":")
}

fn key_text(k: &inspect::KeyInfo) -> String {
    match &k.curve {
        Some(c) => format!("{} {c} ({} bits)", k.kind.to_uppercase(), k.bits),
        None if k.kind == "ed25519" => "Ed25519".to_string(),
        None => format!("{} {} bits", k.kind.to_uppercase(), k.bits),
    }
}

fn sans_text(sans: &[inspect::SanInfo]) -> Vec<String> {
    sans.iter()
        .map(|s| {
            let mut t = format!("{}:{}", s.kind, s.value);
            if s.unicode != s.value {
                t.push_str(&format!(" ({})", s.unicode));
            }
            if let Some(p) = &s.problem {
                t.push_str(&format!(" [malformed: {p}]"));
            }
            t
        })
        .collect()
}

fn human_item(out: &mut String, st: Style, path: &Path, item: &Item, n: Option<usize>) {
    use std::fmt::Write;
    let num = n.map(|n| format!(" #{n}")).unwrap_or_default();
    // Every value goes through `Escaped`: names, SANs and constraints are the
    // certificate maker's text. The two coloured lines escape their parts themselves.
    let raw_line = |out: &mut String, k: &str, v: &str| {
        let label = if k.is_empty() {
            String::new()
        } else {
            format!("{k}:")
        };
        let _ = writeln!(out, "  {label:<20}{v}");
    };
    let line = |out: &mut String, k: &str, v: &str| raw_line(out, k, &Escaped(v).to_string());
    // A file name can hold control characters too (a directory someone else filled).
    let shown_path = Escaped(&path.display().to_string()).to_string();
    match item {
        Item::Certificate(c) => {
            let _ = writeln!(
                out,
                "{}",
                st.bold(&format!("Certificate{num} ({})", shown_path))
            );
            line(out, "Subject", &c.subject);
            line(out, "Issuer", &c.issuer);
            line(
                out,
                "Serial",
                &tlskit_x509::text::serial_from_hex(&c.serial),
            );
            let now = time::OffsetDateTime::now_utc();
            let state = match time::OffsetDateTime::parse(
                &c.not_after,
                &time::format_description::well_known::Rfc3339,
            ) {
                Ok(na) if na < now => st.bad("EXPIRED"),
                Ok(na) => st.good(&format!("{} days left", (na - now).whole_days())),
                Err(_) => String::new(),
            };
            raw_line(
                out,
                "Valid",
                &format!(
                    "{} to {}  {state}",
                    Escaped(&c.not_before),
                    Escaped(&c.not_after)
                ),
            );
            let sans = sans_text(&c.sans);
            line(
                out,
                "SANs",
                if sans.is_empty() { "(none)" } else { &sans[0] },
            );
            for s in sans.iter().skip(1) {
                line(out, "", s);
            }
            line(out, "Key", &key_text(&c.key));
            line(out, "Signature", &c.signature_algorithm);
            let ca = if c.is_ca {
                match c.path_len {
                    Some(p) => format!("yes (path length {p})"),
                    None => "yes".into(),
                }
            } else {
                "no".into()
            };
            line(out, "CA", &ca);
            if !c.key_usage.is_empty() {
                line(out, "Key usage", &c.key_usage.join(", "));
            }
            if !c.extended_key_usage.is_empty() {
                line(out, "Extended usage", &c.extended_key_usage.join(", "));
            }
            if let Some(nc) = &c.name_constraints {
                if !nc.permitted.is_empty() {
                    line(out, "Permitted names", &nc.permitted.join(", "));
                }
                if !nc.excluded.is_empty() {
                    line(out, "Excluded names", &nc.excluded.join(", "));
                }
            }
            let exts: Vec<String> = c
                .extensions
                .iter()
                .map(|e| format!("{}{}", e.name, if e.critical { " (critical)" } else { "" }))
                .collect();
            line(out, "Extensions", &exts.join(", "));
            line(out, "SHA-256", &colon_hex(&c.sha256));
        }
        Item::Request(r) => {
            let _ = writeln!(
                out,
                "{}",
                st.bold(&format!("Certificate request{num} ({})", shown_path))
            );
            line(out, "Subject", &r.subject);
            let sans = sans_text(&r.sans);
            line(
                out,
                "SANs",
                if sans.is_empty() { "(none)" } else { &sans[0] },
            );
            for s in sans.iter().skip(1) {
                line(out, "", s);
            }
            line(out, "Key", &key_text(&r.key));
            raw_line(
                out,
                "Signature",
                &format!(
                    "{} {}",
                    Escaped(&r.signature_algorithm),
                    if r.signature_valid {
                        st.good("(verifies)")
                    } else {
                        st.bad("(DOES NOT VERIFY)")
                    }
                ),
            );
            line(out, "SHA-256", &colon_hex(&r.sha256));
        }
        Item::PublicKey(k) => {
            let _ = writeln!(
                out,
                "{}",
                st.bold(&format!("Public key{num} ({})", shown_path))
            );
            line(out, "Key", &key_text(&k.key));
            line(out, "SPKI SHA-256", &colon_hex(&k.sha256));
        }
        Item::PrivateKey(k) => {
            let _ = writeln!(
                out,
                "{}",
                st.bold(&format!("Private key{num} ({})", shown_path))
            );
            if k.encrypted {
                line(
                    out,
                    "Key",
                    "encrypted (PKCS#8); nothing more is shown without decrypting",
                );
            }
            if let Some(key) = &k.key {
                line(out, "Key", &key_text(key));
            }
            if let Some(h) = &k.public_key_sha256 {
                line(out, "Public key SHA-256", &colon_hex(h));
            }
        }
        Item::Crl(c) => {
            let _ = writeln!(out, "{}", st.bold(&format!("CRL{num} ({})", shown_path)));
            line(out, "Issuer", &c.issuer);
            line(out, "This update", &c.this_update);
            if let Some(n) = &c.next_update {
                line(out, "Next update", n);
            }
            if let Some(n) = &c.crl_number {
                line(out, "CRL number", n);
            }
            line(out, "Revoked", &c.revoked.len().to_string());
            for r in &c.revoked {
                line(
                    out,
                    "",
                    &format!(
                        "{} at {}{}",
                        tlskit_x509::text::serial_from_hex(&r.serial),
                        r.revoked_at,
                        r.reason
                            .as_ref()
                            .map(|x| format!(" ({x})"))
                            .unwrap_or_default()
                    ),
                );
            }
            line(out, "SHA-256", &colon_hex(&c.sha256));
        }
        _ => {}
    }
}

/// One finding of `lint --json`: the record `store lint` uses too (severity, code,
/// message, subject, path, index).
#[derive(serde::Serialize)]
struct FindingJson<'a> {
    #[serde(flatten)]
    finding: &'a lint::Finding,
    path: String,
}

/// One file of `lint --json`.
#[derive(serde::Serialize)]
struct LintJson<'a> {
    file: String,
    errors: usize,
    warnings: usize,
    findings: Vec<FindingJson<'a>>,
}

/// `lint --json` (schema tlskit.lint/1): the same object for one file or several (before
/// schema 1: one file's object, or an array of them).
#[derive(serde::Serialize)]
struct LintDoc<'a> {
    /// Error findings in all files.
    errors: usize,
    /// Warning findings in all files.
    warnings: usize,
    /// Every finding, in file order.
    findings: Vec<FindingJson<'a>>,
    /// Per file.
    files: Vec<LintJson<'a>>,
    /// Files that could not be read or parsed.
    input_errors: Vec<InputError>,
}

/// Read every file of `show` or `lint` with `read` and hand each result to `use_it`. A
/// file that cannot be read is warned about and listed in the input errors (the others
/// go on), unless it is the only file: then its error is the command's.
fn per_file<T, E>(
    files: &[PathBuf],
    read: impl Fn(&Path) -> Result<T, E>,
    mut use_it: impl FnMut(&Path, T, &mut Vec<InputError>),
) -> anyhow::Result<Vec<InputError>>
where
    E: std::error::Error + Send + Sync + 'static,
{
    let mut input_errors = Vec::new();
    for f in files {
        match read(f) {
            Ok(t) => use_it(f, t, &mut input_errors),
            Err(e) => {
                if files.len() == 1 {
                    return Err(e.into());
                }
                warn(f, &e);
                input_errors.push(InputError {
                    path: f.display().to_string(),
                    message: e.to_string(),
                });
            }
        }
    }
    Ok(input_errors)
}

pub(crate) fn lint(a: LintArgs) -> CmdResult {
    let now = time::OffsetDateTime::now_utc();
    let style = Style::stdout();
    let mut reports = Vec::new();
    let mut negative = false;
    let input_errors = per_file(
        &a.files,
        |f| lint::lint(f, now),
        |f, findings, _| reports.push((f.to_path_buf(), findings)),
    )?;
    if reports.is_empty() {
        anyhow::bail!("nothing could be linted");
    }
    let mut json = Vec::new();
    for (f, findings) in &reports {
        let errors = findings
            .iter()
            .filter(|x| x.severity == Severity::Error)
            .count();
        let warnings = findings
            .iter()
            .filter(|x| x.severity == Severity::Warning)
            .count();
        negative |= errors + warnings > 0;
        if a.json {
            let file = f.display().to_string();
            json.push(LintJson {
                file: file.clone(),
                errors,
                warnings,
                findings: findings
                    .iter()
                    .map(|finding| FindingJson {
                        finding,
                        path: file.clone(),
                    })
                    .collect(),
            });
            continue;
        }
        if findings.is_empty() {
            println!(
                "{}: {}",
                Escaped(&f.display().to_string()),
                style.good("no findings")
            );
        }
        for x in findings {
            let sev = match x.severity {
                Severity::Error => style.bad("error"),
                Severity::Warning => style.warn("warning"),
                Severity::Info => "info".to_string(),
            };
            println!(
                "{}: {sev}: [{}] #{} {}: {}",
                Escaped(&f.display().to_string()),
                x.code,
                x.index,
                Escaped(&x.subject),
                Escaped(&x.message)
            );
        }
    }
    if a.json {
        let doc = LintDoc {
            errors: json.iter().map(|f| f.errors).sum(),
            warnings: json.iter().map(|f| f.warnings).sum(),
            findings: json
                .iter()
                .flat_map(|f| {
                    f.findings.iter().map(|x| FindingJson {
                        finding: x.finding,
                        path: x.path.clone(),
                    })
                })
                .collect(),
            files: json,
            input_errors,
        };
        print_json(&doc)?;
    }
    Ok(if negative {
        Outcome::Negative
    } else {
        Outcome::Success
    })
}

/// Names for one line of human output: all of them up to 8, else the first 6 and a count
/// (`--json` always lists every name).
fn summarize_names(names: &[String]) -> String {
    const SHOW: usize = 6;
    if names.len() <= SHOW + 2 {
        return names.join(", ");
    }
    format!(
        "{}, ... ({} names in all; --json lists them)",
        names[..SHOW].join(", "),
        names.len()
    )
}
