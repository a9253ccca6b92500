//! A small, scriptable, hostile ACME CA for the tests (issue 27): RFC 8555 over HTTPS on a
//! loopback port, with a test PKI made here (rcgen). It does not check JWS signatures or
//! validate anything (every authorization is valid at once); it reads the payloads it
//! needs (identifiers, `replaces`, the CSR) and answers with what its [`Mode`] says: a
//! `Retry-After` on orders or renewal information, an ARI window anywhere in time, and
//! certificates that are not yet valid, expired, in a 51-certificate chain, for another
//! key or for other names. The mode can change while a client runs.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// Which certificate the CA hands back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cert {
    /// Valid from a minute ago for the CA's lifetime, for the CSR's key and names.
    Good,
    /// notBefore a year ahead.
    NotYetValid,
    /// Expired ten days ago.
    Expired,
    /// The leaf and 50 copies of the issuer: 51 certificates.
    Chain51,
    /// For a key of the CA's own.
    WrongKey,
    /// For `evil.test` instead of the names ordered.
    WrongNames,
    /// Good, but signed by a CA other than the one whose root `roots` holds.
    OtherIssuer,
}

/// Where the ARI window is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Window {
    /// 30 to 31 days ahead (a fresh 90-day certificate is not due).
    Ahead,
    /// Two hours to one hour ago: due now (what a CA says of a revoked certificate).
    Past,
    /// 0001-01-01 to 0001-01-02.
    Year1,
    /// 9999-12-30 to 9999-12-31.
    Year9999,
}

/// What the CA does.
#[derive(Debug, Clone)]
pub(crate) struct Mode {
    pub(crate) cert: Cert,
    pub(crate) window: Window,
    /// `Retry-After` on every order response, as sent.
    pub(crate) order_retry_after: Option<String>,
    /// `Retry-After` on renewal information, as sent (instant-acme needs one).
    pub(crate) ari_retry_after: String,
    /// Lifetime of a good certificate.
    pub(crate) lifetime: Duration,
}

impl Default for Mode {
    fn default() -> Self {
        Self {
            cert: Cert::Good,
            window: Window::Ahead,
            order_retry_after: None,
            ari_retry_after: "60".into(),
            lifetime: Duration::from_secs(90 * 86_400),
        }
    }
}

/// `2^64 - 1` seconds: what made `tlskit` panic.
pub(crate) const HUGE: &str = "18446744073709551615";

struct Order {
    names: Vec<String>,
    replaces: Option<serde_json::Value>,
    chain: Option<String>,
}

#[derive(Default)]
struct State {
    orders: Vec<Order>,
}

/// The running CA; stopped on drop.
pub(crate) struct HostileCa {
    pub(crate) port: u16,
    /// Its HTTPS root (also the issuer of what it signs), PEM file for `--acme-roots`.
    pub(crate) roots: PathBuf,
    mode: Arc<Mutex<Mode>>,
    state: Arc<Mutex<State>>,
    /// Renewal-information requests answered.
    ari: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    _dir: tempfile::TempDir,
}

impl Drop for HostileCa {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

struct Shared {
    mode: Arc<Mutex<Mode>>,
    state: Arc<Mutex<State>>,
    ari: Arc<AtomicU64>,
    issuer: CertifiedIssuer<'static, KeyPair>,
    other: CertifiedIssuer<'static, KeyPair>,
    base: String,
    nonce: AtomicU64,
}

impl HostileCa {
    pub(crate) fn start(mode: Mode) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = test_root("hostile ACME test root");
        let mut leaf =
            CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
                .expect("params");
        leaf.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
        leaf.use_authority_key_identifier_extension = true;
        leaf.distinguished_name = rcgen::DistinguishedName::new();
        leaf.distinguished_name
            .push(rcgen::DnType::CommonName, "localhost");
        let leaf_key = KeyPair::generate().expect("key");
        let leaf = leaf.signed_by(&leaf_key, &root).expect("leaf");
        let roots = dir.path().join("roots.pem");
        std::fs::write(&roots, root.pem()).expect("write");

        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let key =
            rustls::pki_types::PrivateKeyDer::try_from(leaf_key.serialize_der()).expect("key der");
        let tls = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_no_client_auth()
            .with_single_cert(vec![leaf.der().clone()], key)
            .expect("tls config");
        let tls = Arc::new(tls);

        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let port = listener.local_addr().expect("addr").port();
        let mode = Arc::new(Mutex::new(mode));
        let state = Arc::new(Mutex::new(State::default()));
        let ari = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let shared = Arc::new(Shared {
            mode: mode.clone(),
            state: state.clone(),
            ari: ari.clone(),
            issuer: root,
            other: test_root("another ACME test root"),
            base: format!("https://127.0.0.1:{port}"),
            nonce: AtomicU64::new(1),
        });
        let stop2 = stop.clone();
        let thread = std::thread::spawn(move || {
            while !stop2.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((s, _)) => {
                        let (tls, shared) = (tls.clone(), shared.clone());
                        std::thread::spawn(move || serve_one(s, tls, &shared));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Self {
            port,
            roots,
            mode,
            state,
            ari,
            stop,
            thread: Some(thread),
            _dir: dir,
        }
    }

    pub(crate) fn directory(&self) -> String {
        format!("https://127.0.0.1:{}/dir", self.port)
    }

    /// Change what the CA does from now on.
    pub(crate) fn set(&self, f: impl FnOnce(&mut Mode)) {
        f(&mut self.mode.lock().expect("mode"));
    }

    /// Renewal-information requests so far.
    pub(crate) fn ari_requests(&self) -> u64 {
        self.ari.load(Ordering::SeqCst)
    }

    /// Orders created so far.
    pub(crate) fn orders(&self) -> usize {
        self.state.lock().expect("state").orders.len()
    }

    /// Certificates handed out so far.
    pub(crate) fn issued(&self) -> usize {
        let st = self.state.lock().expect("state");
        st.orders.iter().filter(|o| o.chain.is_some()).count()
    }
}

/// A self-signed CA certificate named `cn`, with its key.
fn test_root(cn: &str) -> CertifiedIssuer<'static, KeyPair> {
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("params");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name.push(rcgen::DnType::CommonName, cn);
    ca.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::DigitalSignature,
    ];
    CertifiedIssuer::self_signed(ca, KeyPair::generate().expect("key")).expect("root")
}

fn serve_one(s: TcpStream, tls: Arc<rustls::ServerConfig>, shared: &Shared) {
    let _ = s.set_nonblocking(false);
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let Ok(conn) = rustls::ServerConnection::new(tls) else {
        return;
    };
    let mut stream = rustls::StreamOwned::new(conn, s);
    let mut reader = BufReader::new(&mut stream);
    let mut request = String::new();
    if reader.read_line(&mut request).is_err() {
        return;
    }
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).is_err() || line.is_empty() {
            return;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                length = v.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0u8; length.min(1 << 20)];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    drop(reader);
    let mut parts = request.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let path = parts.next().unwrap_or("").to_string();
    let (status, headers, content) = answer(shared, &method, &path, &body);
    let mut out = format!("HTTP/1.1 {status}\r\n");
    for (k, v) in &headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    let nonce = shared.nonce.fetch_add(1, Ordering::SeqCst);
    out.push_str(&format!(
        "Replay-Nonce: nonce-{nonce:016}\r\nCache-Control: no-store\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
        content.len()
    ));
    let mut bytes = out.into_bytes();
    if method != "HEAD" {
        bytes.extend_from_slice(content.as_bytes());
    }
    let _ = stream.write_all(&bytes);
    let _ = stream.flush();
    stream.conn.send_close_notify();
    let _ = stream.flush();
}

/// The JWS payload of a POST (empty for POST-as-GET), as JSON.
fn payload(body: &[u8]) -> serde_json::Value {
    let jws: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    let p = jws["payload"].as_str().unwrap_or("");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(p)
        .unwrap_or_default();
    serde_json::from_slice(&bytes).unwrap_or_default()
}

type Answer = (&'static str, Vec<(&'static str, String)>, String);

fn json(status: &'static str, extra: Vec<(&'static str, String)>, v: serde_json::Value) -> Answer {
    let mut h = vec![("Content-Type", "application/json".to_string())];
    h.extend(extra);
    (status, h, v.to_string())
}

fn order_json(shared: &Shared, id: usize, o: &Order) -> serde_json::Value {
    let b = &shared.base;
    let mut v = serde_json::json!({
        "status": if o.chain.is_some() { "valid" } else { "ready" },
        "identifiers": o.names.iter().map(|n| serde_json::json!({"type": "dns", "value": n})).collect::<Vec<_>>(),
        "authorizations": (0..o.names.len()).map(|i| format!("{b}/authz/{id}/{i}")).collect::<Vec<_>>(),
        "finalize": format!("{b}/finalize/{id}"),
    });
    if o.chain.is_some() {
        v["certificate"] = serde_json::json!(format!("{b}/cert/{id}"));
    }
    if let Some(r) = &o.replaces {
        v["replaces"] = r.clone();
    }
    v
}

fn answer(shared: &Shared, method: &str, path: &str, body: &[u8]) -> Answer {
    let b = shared.base.clone();
    let mode = shared.mode.lock().expect("mode").clone();
    let order_headers = || -> Vec<(&'static str, String)> {
        mode.order_retry_after
            .iter()
            .map(|r| ("Retry-After", r.clone()))
            .collect()
    };
    let seg: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match (method, seg.as_slice()) {
        ("GET", ["dir"]) => json(
            "200 OK",
            vec![],
            serde_json::json!({
                "newNonce": format!("{b}/nonce"),
                "newAccount": format!("{b}/account"),
                "newOrder": format!("{b}/order"),
                "revokeCert": format!("{b}/revoke"),
                "renewalInfo": format!("{b}/ari"),
            }),
        ),
        ("HEAD" | "GET", ["nonce"]) => ("200 OK", vec![], String::new()),
        ("POST", ["account"]) => json(
            "201 Created",
            vec![("Location", format!("{b}/acct/1"))],
            serde_json::json!({"status": "valid", "orders": format!("{b}/acct/1/orders")}),
        ),
        ("POST", ["acct", _]) => json("200 OK", vec![], serde_json::json!({"status": "valid"})),
        ("POST", ["order"]) => {
            let p = payload(body);
            let names: Vec<String> = p["identifiers"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|i| i["value"].as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            let o = Order {
                names,
                replaces: p.get("replaces").cloned(),
                chain: None,
            };
            let mut st = shared.state.lock().expect("state");
            let id = st.orders.len();
            let v = order_json(shared, id, &o);
            st.orders.push(o);
            let mut h = order_headers();
            h.push(("Location", format!("{b}/order/{id}")));
            json("201 Created", h, v)
        }
        ("POST", ["order", id]) => {
            let st = shared.state.lock().expect("state");
            match id
                .parse::<usize>()
                .ok()
                .and_then(|i| st.orders.get(i).map(|o| (i, o)))
            {
                Some((i, o)) => json("200 OK", order_headers(), order_json(shared, i, o)),
                None => ("404 Not Found", vec![], String::new()),
            }
        }
        ("POST", ["authz", id, i]) => {
            let st = shared.state.lock().expect("state");
            let name = id
                .parse::<usize>()
                .ok()
                .and_then(|id| st.orders.get(id))
                .and_then(|o| o.names.get(i.parse::<usize>().unwrap_or(usize::MAX)))
                .cloned()
                .unwrap_or_default();
            json(
                "200 OK",
                vec![],
                serde_json::json!({
                    "identifier": {"type": "dns", "value": name},
                    "status": "valid",
                    "challenges": [],
                }),
            )
        }
        ("POST", ["finalize", id]) => {
            let p = payload(body);
            let csr = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(p["csr"].as_str().unwrap_or(""))
                .unwrap_or_default();
            let mut st = shared.state.lock().expect("state");
            let Some((i, o)) = id
                .parse::<usize>()
                .ok()
                .and_then(|i| st.orders.get_mut(i).map(|o| (i, o)))
            else {
                return ("404 Not Found", vec![], String::new());
            };
            o.chain = Some(issue(shared, &mode, &o.names, &csr));
            let v = order_json(shared, i, o);
            json("200 OK", order_headers(), v)
        }
        ("POST", ["cert", id]) => {
            let st = shared.state.lock().expect("state");
            match id
                .parse::<usize>()
                .ok()
                .and_then(|i| st.orders.get(i))
                .and_then(|o| o.chain.clone())
            {
                Some(c) => (
                    "200 OK",
                    vec![("Content-Type", "application/pem-certificate-chain".into())],
                    c,
                ),
                None => ("404 Not Found", vec![], String::new()),
            }
        }
        ("GET", ["ari", _]) => {
            shared.ari.fetch_add(1, Ordering::SeqCst);
            let now = OffsetDateTime::now_utc();
            let fmt = |t: OffsetDateTime| t.format(&Rfc3339).expect("rfc3339");
            let (start, end) = match mode.window {
                Window::Ahead => (
                    fmt(now + time::Duration::days(30)),
                    fmt(now + time::Duration::days(31)),
                ),
                Window::Past => (
                    fmt(now - time::Duration::hours(2)),
                    fmt(now - time::Duration::hours(1)),
                ),
                Window::Year1 => (
                    "0001-01-01T00:00:00Z".to_string(),
                    "0001-01-02T00:00:00Z".to_string(),
                ),
                Window::Year9999 => (
                    "9999-12-30T00:00:00Z".to_string(),
                    "9999-12-31T00:00:00Z".to_string(),
                ),
            };
            json(
                "200 OK",
                vec![("Retry-After", mode.ari_retry_after.clone())],
                serde_json::json!({"suggestedWindow": {"start": start, "end": end}}),
            )
        }
        ("POST", ["revoke"]) => ("200 OK", vec![], String::new()),
        _ => json(
            "404 Not Found",
            vec![],
            serde_json::json!({"type": "urn:ietf:params:acme:error:malformed", "detail": "no such resource"}),
        ),
    }
}

/// The chain (PEM) the mode asks for, for the CSR's key and `names`.
fn issue(shared: &Shared, mode: &Mode, names: &[String], csr: &[u8]) -> String {
    let now = OffsetDateTime::now_utc();
    let day = time::Duration::days(1);
    let life = time::Duration::try_from(mode.lifetime).expect("lifetime");
    let (nb, na) = match mode.cert {
        Cert::NotYetValid => (now + 365 * day, now + 455 * day),
        Cert::Expired => (now - 100 * day, now - 10 * day),
        _ => (
            now - time::Duration::minutes(1),
            now - time::Duration::minutes(1) + life,
        ),
    };
    let names = if mode.cert == Cert::WrongNames {
        vec!["evil.test".to_string()]
    } else {
        names.to_vec()
    };
    let mut params = CertificateParams::new(names).expect("params");
    params.distinguished_name = rcgen::DistinguishedName::new();
    params.not_before = nb;
    params.not_after = na;
    params.use_authority_key_identifier_extension = true;
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
    let csr = rcgen::CertificateSigningRequestParams::from_der(&csr.to_vec().into())
        .expect("the client's CSR parses");
    let issuer = if mode.cert == Cert::OtherIssuer {
        &shared.other
    } else {
        &shared.issuer
    };
    let leaf = if mode.cert == Cert::WrongKey {
        let other = KeyPair::generate().expect("key");
        params.signed_by(&other, issuer)
    } else {
        params.signed_by(&csr.public_key, issuer)
    }
    .expect("sign");
    let mut pem = leaf.pem();
    let copies = if mode.cert == Cert::Chain51 { 50 } else { 1 };
    for _ in 0..copies {
        pem.push_str(&issuer.pem());
    }
    pem
}
