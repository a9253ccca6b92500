//! The ACME server's protocol from a raw client (fast tier: loopback only, no external
//! program): JWS checks and their problem documents, nonces, order-time name constraints
//! and profiles, http-01 validation against a responder made here, finalization with the
//! CSR check, certificate download, the directory lock.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{EcdsaKeyPair, KeyPair as _, ECDSA_P256_SHA256_FIXED_SIGNING};
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine as _;
use rustls::pki_types::pem::PemObject;
use serde_json::{json, Value};

struct Server {
    _t: tempfile::TempDir,
    ca: PathBuf,
    addr: SocketAddr,
    /// The metrics listener (plain HTTP).
    metrics: SocketAddr,
    http_port: u16,
    tls: Arc<rustls::ClientConfig>,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

/// A CA permitted `localhost` and `example.test`, with `acme_toml`, served in a thread.
fn start(acme_toml: &str) -> Server {
    start_at(acme_toml, tlskit_tls::clock::system())
}

/// [`start`] with the server's clock, checking its own certificate every 20 ms, metrics
/// served.
fn start_at(acme_toml: &str, clock: Arc<dyn tlskit_tls::clock::Clock>) -> Server {
    let t = tempfile::tempdir().expect("tempdir");
    let ca = t.path().join("ca");
    tlskit_pki::ca::init(
        &ca,
        &tlskit_pki::ca::InitOptions::new()
            .days(3650)
            .permit_dns(vec!["localhost".into(), "example.test".into()]),
    )
    .expect("ca init");
    std::fs::write(ca.join("acme.toml"), acme_toml).expect("acme.toml");
    let http_port = free_port();
    let metrics = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let mut opts =
        tlskit_ca_server::ServeOptions::new(ca.clone(), "127.0.0.1:0".parse().expect("addr"))
            .validation_ports(http_port, free_port())
            .metrics(Some(metrics))
            .renewal_check(Duration::from_millis(20));
    opts.clock = clock;
    let addr = tlskit_testkit::serve_thread::serve_in_thread("ca serve", |ready| {
        tlskit_ca_server::serve(opts, ready)
    });
    let mut roots = rustls::RootCertStore::empty();
    for c in rustls::pki_types::CertificateDer::pem_file_iter(ca.join("ca.pem")).expect("ca.pem") {
        roots.add(c.expect("cert")).expect("root");
    }
    let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::aws_lc_rs::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_root_certificates(roots)
    .with_no_client_auth();
    Server {
        _t: t,
        ca,
        addr,
        metrics,
        http_port,
        tls: Arc::new(tls),
    }
}

struct Resp {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Resp {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
    fn problem(&self) -> String {
        self.json()["type"]
            .as_str()
            .unwrap_or("")
            .trim_start_matches("urn:ietf:params:acme:error:")
            .to_string()
    }
}

impl Server {
    fn url(&self, path: &str) -> String {
        format!("https://{}{path}", self.addr)
    }

    fn request(&self, method: &str, path: &str, ctype: &str, body: &[u8]) -> Resp {
        self.request_declaring(method, path, ctype, body, body.len())
    }

    /// A request whose Content-Length says `declared` (more than `body` is sent: the
    /// server answers on the header alone).
    fn request_declaring(
        &self,
        method: &str,
        path: &str,
        ctype: &str,
        body: &[u8],
        declared: usize,
    ) -> Resp {
        let tcp = TcpStream::connect(self.addr).expect("connect");
        tcp.set_read_timeout(Some(Duration::from_secs(20)))
            .expect("timeout");
        let conn = rustls::ClientConnection::new(
            self.tls.clone(),
            rustls::pki_types::ServerName::IpAddress(self.addr.ip().into()),
        )
        .expect("tls");
        let mut s = rustls::StreamOwned::new(conn, tcp);
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            self.addr, declared
        );
        s.write_all(head.as_bytes()).expect("write");
        let _ = s.write_all(body);
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        let text = String::from_utf8_lossy(&out).to_string();
        let (head, rest) = text.split_once("\r\n\r\n").expect("a response");
        let mut lines = head.lines();
        let status = lines
            .next()
            .and_then(|l| l.split(' ').nth(1))
            .and_then(|c| c.parse().ok())
            .expect("status");
        let headers = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect();
        Resp {
            status,
            headers,
            body: rest.as_bytes().to_vec(),
        }
    }

    fn nonce(&self) -> String {
        self.request("HEAD", "/acme/new-nonce", "text/plain", b"")
            .header("Replay-Nonce")
            .expect("nonce")
            .to_string()
    }
}

/// An ES256 account key.
struct Key {
    kp: EcdsaKeyPair,
    rng: SystemRandom,
    pkcs8: Vec<u8>,
}

impl Key {
    fn new() -> Self {
        let rng = SystemRandom::new();
        let pkcs8 =
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).expect("key");
        let kp = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref())
            .expect("key");
        Key {
            kp,
            rng,
            pkcs8: pkcs8.as_ref().to_vec(),
        }
    }
    fn jwk(&self) -> Value {
        let p = self.kp.public_key().as_ref();
        json!({"crv":"P-256","kty":"EC","x":B64.encode(&p[1..33]),"y":B64.encode(&p[33..])})
    }
    fn thumbprint(&self) -> String {
        let j = self.jwk();
        let c = format!(
            r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#,
            j["x"].as_str().expect("x"),
            j["y"].as_str().expect("y")
        );
        B64.encode(aws_lc_rs::digest::digest(
            &aws_lc_rs::digest::SHA256,
            c.as_bytes(),
        ))
    }
    /// A flattened JWS with this protected header and payload (None: POST-as-GET).
    fn sign(&self, header: Value, payload: Option<&Value>) -> Vec<u8> {
        let p = B64.encode(header.to_string());
        let pl = payload
            .map(|v| B64.encode(v.to_string()))
            .unwrap_or_default();
        let sig = self
            .kp
            .sign(&self.rng, format!("{p}.{pl}").as_bytes())
            .expect("sign");
        json!({"protected": p, "payload": pl, "signature": B64.encode(sig.as_ref())})
            .to_string()
            .into_bytes()
    }
}

/// An account on the server, and the key that signs for it.
struct Client<'a> {
    srv: &'a Server,
    key: Key,
    kid: String,
}

impl<'a> Client<'a> {
    fn new(srv: &'a Server) -> Self {
        let key = Key::new();
        let url = srv.url("/acme/new-account");
        let body = key.sign(
            json!({"alg":"ES256","jwk":key.jwk(),"nonce":srv.nonce(),"url":url}),
            Some(&json!({"termsOfServiceAgreed": true})),
        );
        let r = srv.request("POST", "/acme/new-account", "application/jose+json", &body);
        assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
        let kid = r.header("Location").expect("location").to_string();
        Client { srv, key, kid }
    }
    fn post(&self, path_or_url: &str, payload: Option<&Value>) -> Resp {
        let path = path_or_url
            .strip_prefix(&self.srv.url(""))
            .unwrap_or(path_or_url)
            .to_string();
        let body = self.key.sign(
            json!({"alg":"ES256","kid":self.kid,"nonce":self.srv.nonce(),"url":self.srv.url(&path)}),
            payload,
        );
        self.srv
            .request("POST", &path, "application/jose+json", &body)
    }
}

#[test]
fn jws_checks_nonces_and_bounds_answer_problem_documents() {
    let srv = start("");
    let d = srv.request("GET", "/directory", "text/plain", b"").json();
    assert_eq!(
        d["meta"]["profiles"]["shortlived"], "6 days, serverAuth",
        "{d}"
    );
    assert!(d["renewalInfo"]
        .as_str()
        .is_some_and(|u| u.ends_with("/acme/renewal-info")));

    let key = Key::new();
    let url = srv.url("/acme/new-account");
    let nonce = srv.nonce();
    let body = key.sign(
        json!({"alg":"ES256","jwk":key.jwk(),"nonce":nonce,"url":url}),
        Some(&json!({})),
    );
    let r = srv.request("POST", "/acme/new-account", "application/jose+json", &body);
    assert_eq!(r.status, 201);
    assert!(r.header("Replay-Nonce").is_some());
    // The same request again: its nonce was used.
    let r = srv.request("POST", "/acme/new-account", "application/jose+json", &body);
    assert_eq!((r.status, r.problem().as_str()), (400, "badNonce"));
    // A new nonce, the same key: the existing account, 200.
    let body = key.sign(
        json!({"alg":"ES256","jwk":key.jwk(),"nonce":srv.nonce(),"url":url}),
        Some(&json!({})),
    );
    let r = srv.request("POST", "/acme/new-account", "application/jose+json", &body);
    assert_eq!(r.status, 200);
    // HS256 is not an account key algorithm.
    let body = key.sign(
        json!({"alg":"HS256","jwk":key.jwk(),"nonce":srv.nonce(),"url":url}),
        Some(&json!({})),
    );
    let r = srv.request("POST", "/acme/new-account", "application/jose+json", &body);
    assert_eq!(r.problem(), "badSignatureAlgorithm");
    assert!(r.json()["algorithms"]
        .as_array()
        .is_some_and(|a| a.len() == 4));
    // Signed for another URL.
    let body = key.sign(
        json!({"alg":"ES256","jwk":key.jwk(),"nonce":srv.nonce(),"url":srv.url("/acme/new-order")}),
        Some(&json!({})),
    );
    let r = srv.request("POST", "/acme/new-account", "application/jose+json", &body);
    assert_eq!((r.status, r.problem().as_str()), (403, "unauthorized"));
    // A signature by another key.
    let other = Key::new();
    let mut v: Value = serde_json::from_slice(&key.sign(
        json!({"alg":"ES256","jwk":key.jwk(),"nonce":srv.nonce(),"url":url}),
        Some(&json!({})),
    ))
    .expect("json");
    let forged: Value = serde_json::from_slice(&other.sign(json!({}), None)).expect("json");
    v["signature"] = forged["signature"].clone();
    let r = srv.request(
        "POST",
        "/acme/new-account",
        "application/jose+json",
        v.to_string().as_bytes(),
    );
    assert_eq!(r.problem(), "malformed");
    assert!(String::from_utf8_lossy(&r.body).contains("does not verify"));
    // Oversized body: 413 with a problem document, on the declared length alone (the
    // body is not sent: a server that closes with unread bytes makes the kernel reset
    // the connection, which could drop the answer before the client reads it).
    let r = srv.request_declaring(
        "POST",
        "/acme/new-account",
        "application/jose+json",
        b"",
        70 * 1024,
    );
    assert_eq!((r.status, r.problem().as_str()), (413, "malformed"));
    // Wrong content type.
    let r = srv.request("POST", "/acme/new-account", "application/json", b"{}");
    assert_eq!(r.status, 415);
}

#[test]
fn orders_constraints_profiles_http01_finalize_and_download() {
    let srv = start(
        "[acme_profile.default]\ndays = 30\n[acme_profile.shortlived]\ndays = 6\n\
         extended_key_usage = [\"serverAuth\", \"clientAuth\"]\ndescription = \"mTLS, 6 days\"\n",
    );
    let d = srv.request("GET", "/directory", "text/plain", b"").json();
    assert_eq!(d["meta"]["profiles"]["shortlived"], "mTLS, 6 days", "{d}");
    assert_eq!(
        d["meta"]["profiles"]["default"], "30 days, serverAuth",
        "{d}"
    );
    let c = Client::new(&srv);
    // Outside the CA's name constraints: refused at order time, saying which.
    let r = c.post(
        "/acme/new-order",
        Some(&json!({"identifiers":[{"type":"dns","value":"www.example.com"}]})),
    );
    assert_eq!(r.problem(), "rejectedIdentifier");
    let detail = r.json()["detail"].as_str().unwrap_or("").to_string();
    assert!(
        detail.contains("www.example.com") && detail.contains("example.test"),
        "{detail}"
    );
    let r = c.post(
        "/acme/new-order",
        Some(&json!({"identifiers":[{"type":"dns","value":"a.example.test"}],"profile":"forever"})),
    );
    assert_eq!(r.problem(), "invalidProfile");

    let r = c.post(
        "/acme/new-order",
        Some(&json!({"identifiers":[{"type":"dns","value":"localhost"}],"profile":"shortlived"})),
    );
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    let order_url = r.header("Location").expect("location").to_string();
    let order = r.json();
    assert_eq!(order["status"], "pending");
    let finalize = order["finalize"].as_str().expect("finalize").to_string();
    // Not ready yet.
    let r = c.post(&finalize, Some(&json!({"csr": "AA"})));
    assert_eq!((r.status, r.problem().as_str()), (403, "orderNotReady"));

    let authz_url = order["authorizations"][0]
        .as_str()
        .expect("authz")
        .to_string();
    let authz = c.post(&authz_url, None).json();
    let ch = authz["challenges"]
        .as_array()
        .expect("challenges")
        .iter()
        .find(|c| c["type"] == "http-01")
        .expect("http-01")
        .clone();
    let token = ch["token"].as_str().expect("token").to_string();
    let key_auth = format!("{token}.{}", c.key.thumbprint());
    // The http-01 responder, answering one request.
    let l = TcpListener::bind(("127.0.0.1", srv.http_port)).expect("bind validation port");
    let answer = key_auth.clone();
    let want = format!("/.well-known/acme-challenge/{token}");
    let responder = std::thread::spawn(move || {
        let (mut s, _) = l.accept().expect("accept");
        let mut buf = [0u8; 2048];
        let n = s.read(&mut buf).expect("read");
        let req = String::from_utf8_lossy(&buf[..n]).to_string();
        let ok = req.starts_with(&format!("GET {want} HTTP/1.1"));
        let body = if ok { answer } else { String::new() };
        let _ = s.write_all(
            format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        );
        req
    });
    let r = c.post(ch["url"].as_str().expect("url"), Some(&json!({})));
    assert_eq!(r.status, 200);
    assert!(
        r.headers
            .iter()
            .any(|(k, v)| k.eq_ignore_ascii_case("link") && v.contains("rel=\"up\"")),
        "{:?}",
        r.headers
    );
    let req = responder.join().expect("responder");
    assert!(
        req.to_ascii_lowercase().contains("\nhost: localhost"),
        "{req}"
    );
    let t0 = Instant::now();
    let status = loop {
        let s = c.post(&authz_url, None).json()["status"].clone();
        if s != "pending" || t0.elapsed() > Duration::from_secs(20) {
            break s;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status, "valid");
    assert_eq!(c.post(&order_url, None).json()["status"], "ready");

    // A CSR for other names: badCSR; then the right one.
    let csr = |names: Vec<String>| {
        let k = rcgen::KeyPair::generate().expect("key");
        let mut p = rcgen::CertificateParams::new(names).expect("params");
        p.distinguished_name = rcgen::DistinguishedName::new();
        B64.encode(p.serialize_request(&k).expect("csr").der())
    };
    let r = c.post(
        &finalize,
        Some(&json!({"csr": csr(vec!["localhost".into(), "b.example.test".into()])})),
    );
    assert_eq!(r.problem(), "badCSR");
    // The account's own key in the CSR: refused (RFC 8555 11.1).
    let own = {
        let k = rcgen::KeyPair::try_from(c.key.pkcs8.as_slice()).expect("account key");
        let mut p = rcgen::CertificateParams::new(vec!["localhost".to_string()]).expect("params");
        p.distinguished_name = rcgen::DistinguishedName::new();
        B64.encode(p.serialize_request(&k).expect("csr").der())
    };
    let r = c.post(&finalize, Some(&json!({ "csr": own })));
    assert_eq!(r.problem(), "badCSR");
    assert!(String::from_utf8_lossy(&r.body).contains("account key"));
    let r = c.post(
        &finalize,
        Some(&json!({"csr": csr(vec!["localhost".into()])})),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let done = r.json();
    assert_eq!(done["status"], "valid");
    let r = c.post(done["certificate"].as_str().expect("certificate"), None);
    assert_eq!(
        r.header("Content-Type"),
        Some("application/pem-certificate-chain")
    );
    let chain: Vec<_> = rustls::pki_types::CertificateDer::pem_slice_iter(&r.body)
        .collect::<Result<_, _>>()
        .expect("pem");
    assert_eq!(chain.len(), 2, "the leaf, then the root");
    let (_, leaf) = x509_parser::parse_x509_certificate(chain[0].as_ref()).expect("leaf");
    let v = leaf.validity();
    let days = (v.not_after.timestamp() - v.not_before.timestamp()) / 86_400;
    assert!((5..=6).contains(&days), "shortlived gave {days} days");
    // The profile's extended key usages: this one is for both ends of mTLS.
    let eku = leaf
        .extended_key_usage()
        .expect("eku")
        .expect("an EKU extension")
        .value;
    assert!(eku.server_auth && eku.client_auth, "{eku:?}");
    // Through the CA's own index, as `ca issue` writes it.
    let idx = tlskit_pki::ca::index(&srv.ca).expect("index");
    assert!(idx.iter().any(|e| e.sans == ["dns:localhost"]), "{idx:?}");
    // Another account cannot read this order.
    let other = Client::new(&srv);
    assert_eq!(other.post(&order_url, None).problem(), "unauthorized");
}

#[test]
fn a_second_server_on_one_directory_is_refused_and_eab_required_is_enforced() {
    let srv = start("eab_required = true\n");
    let opts =
        tlskit_ca_server::ServeOptions::new(srv.ca.clone(), "127.0.0.1:0".parse().expect("addr"));
    let e =
        tlskit_ca_server::serve(opts, |_| panic!("a second server started")).expect_err("locked");
    assert!(e.to_string().contains("another `tlskit ca serve`"), "{e}");

    let key = Key::new();
    let url = srv.url("/acme/new-account");
    let r = srv.request(
        "POST",
        "/acme/new-account",
        "application/jose+json",
        &key.sign(
            json!({"alg":"ES256","jwk":key.jwk(),"nonce":srv.nonce(),"url":url}),
            Some(&json!({})),
        ),
    );
    assert_eq!(r.problem(), "externalAccountRequired");
    // Enrolled key: the binding is accepted, and the key is stored 0600.
    let hmac = tlskit_ca_server::eab_add(&srv.ca, "m1").expect("eab add");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(srv.ca.join("acme/eab/m1.key"))
        .expect("key")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let eab = |mac_key: &[u8]| {
        let p = B64.encode(json!({"alg":"HS256","kid":"m1","url":url}).to_string());
        let pl = B64.encode(key.jwk().to_string());
        let tag = aws_lc_rs::hmac::sign(
            &aws_lc_rs::hmac::Key::new(aws_lc_rs::hmac::HMAC_SHA256, mac_key),
            format!("{p}.{pl}").as_bytes(),
        );
        json!({"protected":p,"payload":pl,"signature":B64.encode(tag.as_ref())})
    };
    let send = |binding: Value| {
        srv.request(
            "POST",
            "/acme/new-account",
            "application/jose+json",
            &key.sign(
                json!({"alg":"ES256","jwk":key.jwk(),"nonce":srv.nonce(),"url":url}),
                Some(&json!({"externalAccountBinding": binding})),
            ),
        )
    };
    let r = send(eab(b"not the enrolled key at all......"));
    assert_eq!(r.problem(), "unauthorized");
    let r = send(eab(&B64.decode(hmac.as_bytes()).expect("b64")));
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["externalAccountBinding"]["kid"], "m1");
}

#[test]
fn key_rollover_deactivation_and_the_order_rate_limit() {
    let srv = start("[rate_limits]\nnew_orders_per_hour = 2\n");
    let mut c = Client::new(&srv);
    let order = json!({"identifiers":[{"type":"dns","value":"localhost"}]});
    assert_eq!(c.post("/acme/new-order", Some(&order)).status, 201);
    assert_eq!(c.post("/acme/new-order", Some(&order)).status, 201);
    let r = c.post("/acme/new-order", Some(&order));
    assert_eq!((r.status, r.problem().as_str()), (429, "rateLimited"));

    // Key rollover: the inner JWS is signed by the new key and names the old one.
    let new = Key::new();
    let url = srv.url("/acme/key-change");
    let inner: Value = serde_json::from_slice(&new.sign(
        json!({"alg":"ES256","jwk":new.jwk(),"url":url}),
        Some(&json!({"account": c.kid, "oldKey": c.key.jwk()})),
    ))
    .expect("inner");
    let r = c.post("/acme/key-change", Some(&inner));
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    // The old key no longer signs for the account; the new one does.
    assert_eq!(c.post(&c.kid.clone(), None).problem(), "malformed");
    c.key = new;
    assert_eq!(c.post(&c.kid.clone(), None).json()["status"], "valid");
    // A key that is not the account's cannot roll it over.
    let intruder = Key::new();
    let inner: Value = serde_json::from_slice(&intruder.sign(
        json!({"alg":"ES256","jwk":intruder.jwk(),"url":url}),
        Some(&json!({"account": c.kid, "oldKey": intruder.jwk()})),
    ))
    .expect("inner");
    assert_eq!(
        c.post("/acme/key-change", Some(&inner)).problem(),
        "unauthorized"
    );

    // Deactivation: then every request of the account is refused.
    let r = c.post(&c.kid.clone(), Some(&json!({"status": "deactivated"})));
    assert_eq!(r.json()["status"], "deactivated");
    let r = c.post(&c.kid.clone(), None);
    assert_eq!((r.status, r.problem().as_str()), (403, "unauthorized"));
}

/// Expired state is swept on the server's clock: a pending order and its authorization
/// go once they expire and the sweep interval has passed; the account stays.
#[test]
fn expired_orders_and_authorizations_are_swept_on_the_clock() {
    let clock = Arc::new(tlskit_tls::clock::ManualClock::new(
        std::time::SystemTime::now(),
    ));
    let srv = start_at("[retention]\nsweep_interval_secs = 600\n", clock.clone());
    let c = Client::new(&srv);
    let r = c.post(
        "/acme/new-order",
        Some(&json!({"identifiers":[{"type":"dns","value":"localhost"}]})),
    );
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    let order_url = r.header("Location").expect("location").to_string();
    let acme = srv.ca.join("acme");
    let count = |kind: &str| {
        std::fs::read_dir(acme.join(kind))
            .expect("state dir")
            .filter(|e| {
                e.as_ref()
                    .is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".json"))
            })
            .count()
    };
    let sweeps = || srv.metric("tlskit_acme_state_sweeps_total");
    assert_eq!(
        (count("orders"), count("authz"), count("accounts")),
        (1, 1, 1)
    );
    assert_eq!(sweeps(), 1, "one sweep at start, none before the interval");
    // Six days on: the interval has passed, so the request sweeps, but nothing has
    // expired yet and nothing goes.
    clock.advance(Duration::from_secs(6 * 86_400));
    assert_eq!(c.post(&order_url, None).json()["status"], "pending");
    assert_eq!((count("orders"), count("authz")), (1, 1));
    assert_eq!(sweeps(), 2);
    // Past the order's seven days (and the sweep interval): the next request sweeps.
    clock.advance(Duration::from_secs(86_400 + 1));
    let _ = srv.nonce();
    assert_eq!(
        (count("orders"), count("authz"), count("accounts")),
        (0, 0, 1)
    );
    assert_eq!(sweeps(), 3);
    let r = c.post(&order_url, None);
    assert_eq!(
        (r.status, r.problem().as_str()),
        (404, "malformed"),
        "{}",
        String::from_utf8_lossy(&r.body)
    );
}

impl Server {
    /// The serial of the certificate the server presents (the handshake verifies it
    /// against the CA on the real clock).
    fn served_serial(&self) -> Vec<u8> {
        let mut tcp = TcpStream::connect(self.addr).expect("connect");
        tcp.set_read_timeout(Some(Duration::from_secs(20)))
            .expect("timeout");
        let mut conn = rustls::ClientConnection::new(
            self.tls.clone(),
            rustls::pki_types::ServerName::IpAddress(self.addr.ip().into()),
        )
        .expect("tls");
        while conn.is_handshaking() {
            conn.complete_io(&mut tcp).expect("handshake");
        }
        let leaf = conn.peer_certificates().expect("certificates")[0].clone();
        let (_, x) = x509_parser::parse_x509_certificate(leaf.as_ref()).expect("leaf");
        x.raw_serial().to_vec()
    }
}

impl Server {
    /// A counter from the metrics page (absent: a panic).
    fn metric(&self, name: &str) -> u64 {
        let mut tcp = TcpStream::connect(self.metrics).expect("metrics connect");
        tcp.set_read_timeout(Some(Duration::from_secs(20)))
            .expect("timeout");
        tcp.write_all(b"GET /metrics HTTP/1.1\r\nHost: metrics\r\n\r\n")
            .expect("metrics request");
        let mut page = String::new();
        tcp.read_to_string(&mut page).expect("metrics page");
        page.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in the metrics:\n{page}"))
    }

    /// Wait (at most 20 s) until `n` more checks of the server's own certificate have
    /// completed. The second of them read the clock after this was called: whatever the
    /// test set on the clock before has been seen by a whole check.
    fn after_own_checks(&self, n: u64) {
        let name = "tlskit_acme_own_certificate_checks_total";
        let want = self.metric(name) + n;
        let t0 = Instant::now();
        while self.metric(name) < want {
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "{n} checks of the own certificate did not complete within 20 s"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// The server's own certificate (7 days) is renewed, on its clock, once a third of its
/// life is left: the new one is served without a restart and written to
/// `acme/https.pem`; one that is not due stays. The test waits for the server's checks
/// (its metrics count them), never for a guessed time.
#[test]
fn the_servers_own_certificate_is_renewed_when_due_on_the_clock() {
    let clock = Arc::new(tlskit_tls::clock::ManualClock::new(
        std::time::SystemTime::now(),
    ));
    let srv = start_at("", clock.clone());
    let renewals = || srv.metric("tlskit_acme_own_certificate_renewals_total");
    let first = srv.served_serial();
    let pem = srv.ca.join("acme/https.pem");
    let first_pem = std::fs::read(&pem).expect("https.pem");
    // Four days on, three of seven left: not due.
    clock.advance(Duration::from_secs(4 * 86_400));
    srv.after_own_checks(2);
    assert_eq!(srv.served_serial(), first, "renewed before it was due");
    assert_eq!(renewals(), 0);
    // Five days on, two of seven left: due, renewed by the next check.
    clock.advance(Duration::from_secs(86_400));
    srv.after_own_checks(2);
    assert_ne!(srv.served_serial(), first, "not renewed when due");
    assert!(renewals() >= 1);
    assert_ne!(std::fs::read(&pem).expect("https.pem"), first_pem);
    // Back to the real time: the new certificate (valid from the real now) is not due.
    // A check that read the clock before it moved back may still renew once more; after
    // two checks nothing renews again.
    clock.set_wall(std::time::SystemTime::now());
    srv.after_own_checks(2);
    let settled = (srv.served_serial(), renewals());
    srv.after_own_checks(2);
    assert_eq!((srv.served_serial(), renewals()), settled);
}
