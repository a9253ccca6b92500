//! The listener: TLS with a certificate the CA issues to the server itself (for
//! 127.0.0.1 and localhost, renewed when a third of its lifetime is left), HTTP/1.1
//! connections by hyper with a header deadline, a cap on concurrent connections, and the
//! optional metrics listener (Prometheus text, as `serve`'s).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tlskit_tls::log::{self, Level};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use x509_parser::prelude::*;

use crate::error::ServerError;
use crate::service::Service;

/// Lifetime of the server's own certificate.
const OWN_DAYS: u32 = 7;
/// Connections served at once; more wait in the listen queue.
const MAX_CONNECTIONS: usize = 1024;
/// A TLS handshake, and a request head, must complete within this.
const HANDSHAKE: Duration = Duration::from_secs(10);

/// The server's own certificate, swapped when renewed.
#[derive(Debug)]
pub(crate) struct OwnCert(RwLock<Arc<CertifiedKey>>);

impl ResolvesServerCert for OwnCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.read().unwrap_or_else(|p| p.into_inner()).clone())
    }
}

struct Loaded {
    key: Arc<CertifiedKey>,
    not_before: i64,
    not_after: i64,
    /// Its DNS names and IP addresses, as text.
    names: Vec<String>,
}

fn load(provider: &rustls::crypto::CryptoProvider, chain: &[u8], key: &[u8]) -> Option<Loaded> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(chain)
        .collect::<Result<_, _>>()
        .ok()?;
    let (nb, na, names) = {
        let (_, x) = X509Certificate::from_der(certs.first()?.as_ref()).ok()?;
        let mut names = Vec::new();
        if let Ok(Some(san)) = x.subject_alternative_name() {
            for g in &san.value.general_names {
                match g {
                    GeneralName::DNSName(d) => names.push(d.to_string()),
                    GeneralName::IPAddress(b) => {
                        let ip = match b.len() {
                            4 => <[u8; 4]>::try_from(*b).ok().map(std::net::IpAddr::from),
                            16 => <[u8; 16]>::try_from(*b).ok().map(std::net::IpAddr::from),
                            _ => None,
                        };
                        names.extend(ip.map(|i| i.to_string()));
                    }
                    _ => {}
                }
            }
        }
        (
            x.validity().not_before.timestamp(),
            x.validity().not_after.timestamp(),
            names,
        )
    };
    let k = PrivateKeyDer::from_pem_slice(key).ok()?;
    let signing = provider.key_provider.load_private_key(k).ok()?;
    Some(Loaded {
        key: Arc::new(CertifiedKey::new(certs, signing)),
        not_before: nb,
        not_after: na,
        names,
    })
}

/// Due for renewal: less than a third of the lifetime (`not_before`, `not_after`) left.
fn due((not_before, not_after): (i64, i64), now: i64) -> bool {
    let life = not_after.saturating_sub(not_before).max(1);
    now >= not_after.saturating_sub(life / 3)
}

/// The stored certificate if it is not due and names what is asked, else a new one from
/// the CA (written to `acme_dir/https.pem` and `https.key`, the key 0600).
fn own_certificate(
    ca: &tlskit_pki::ca::Ca,
    acme_dir: &Path,
    extra: &[String],
    provider: &rustls::crypto::CryptoProvider,
    now: i64,
) -> Result<Loaded, ServerError> {
    let mut full: Vec<String> = vec!["127.0.0.1".into(), "localhost".into()];
    let mut short: Vec<String> = vec!["127.0.0.1".into()];
    for n in extra {
        if !full.contains(n) {
            full.push(n.clone());
            short.push(n.clone());
        }
    }
    let cert_path = acme_dir.join("https.pem");
    let key_path = acme_dir.join("https.key");
    if let (Ok(c), Ok(k)) = (
        tlskit_io::read(&cert_path, 1 << 20),
        tlskit_io::read(&key_path, 1 << 20),
    ) {
        if let Some(l) = load(provider, &c, &k) {
            let mut have = l.names.clone();
            have.sort();
            let fits = |want: &[String]| {
                let mut w = want.to_vec();
                w.sort();
                w == have
            };
            if !due((l.not_before, l.not_after), now) && (fits(&full) || fits(&short)) {
                return Ok(l);
            }
        }
    }
    let key = rcgen::KeyPair::generate().map_err(|e| ServerError::file(&key_path, e))?;
    // 127.0.0.1, localhost and the extra names; a CA whose name constraints exclude
    // localhost gets a certificate without it. The CN repeats a DNS name (an IP address
    // as CN would be checked as a DNS name against the constraints), or there is none.
    let mut last = None;
    for names in [&full, &short] {
        let mut p = rcgen::CertificateParams::new(names.clone())
            .map_err(|e| ServerError::file(&cert_path, e))?;
        p.distinguished_name = rcgen::DistinguishedName::new();
        if let Some(dns) = names
            .iter()
            .rev()
            .find(|n| n.parse::<std::net::IpAddr>().is_err())
        {
            p.distinguished_name
                .push(rcgen::DnType::CommonName, dns.as_str());
        }
        let csr = p
            .serialize_request(&key)
            .and_then(|c| c.pem())
            .map_err(|e| ServerError::file(&cert_path, e))?;
        match ca.issue_csr(
            Path::new("the ACME server's own certificate request"),
            csr.as_bytes(),
            &tlskit_pki::ca::IssueOptions::new().days(Some(OWN_DAYS)),
        ) {
            Ok((chain, entry)) => {
                let key_pem = key.serialize_pem();
                tlskit_io::replace(&key_path, &[key_pem.as_bytes()], true)
                    .map_err(|e| ServerError::file(&key_path, e))?;
                tlskit_io::replace(&cert_path, &[chain.as_bytes()], false)
                    .map_err(|e| ServerError::file(&cert_path, e))?;
                log::event(
                    Level::Info,
                    "acme_server_certificate_issued",
                    &[("serial", &entry.serial), ("names", &names.join(","))],
                );
                return load(provider, chain.as_bytes(), key_pem.as_bytes()).ok_or_else(|| {
                    ServerError::file(&cert_path, "the issued certificate could not be loaded")
                });
            }
            Err(tlskit_pki::PkiError::Refused(why)) => last = Some(why),
            Err(e) => return Err(e.into()),
        }
    }
    Err(ServerError::Pki(tlskit_pki::PkiError::Refused(
        last.unwrap_or_default(),
    )))
}

/// What `run` needs.
pub(crate) struct Run {
    pub(crate) service: Arc<Service>,
    pub(crate) listen: SocketAddr,
    pub(crate) metrics: Option<SocketAddr>,
    pub(crate) server_names: Vec<String>,
    pub(crate) acme_dir: PathBuf,
    pub(crate) renewal_check: Duration,
}

/// Bind, then serve until SIGINT or SIGTERM. `ready` is called once both listeners
/// accept, with the address bound.
pub(crate) async fn run(r: Run, ready: impl FnOnce(SocketAddr)) -> Result<(), ServerError> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let now = || i64::try_from(r.service.clock.unix_secs()).unwrap_or(i64::MAX);
    let first = own_certificate(
        &r.service.ca,
        &r.acme_dir,
        &r.server_names,
        &provider,
        now(),
    )?;
    let mut current_not = (first.not_before, first.not_after);
    let own = Arc::new(OwnCert(RwLock::new(first.key)));
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(ServerError::Tls)?
        .with_no_client_auth()
        .with_cert_resolver(own.clone());
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(cfg));

    let std_l = tlskit_tls::sock::listener(r.listen, 1024).map_err(|e| ServerError::Listen {
        addr: r.listen,
        reason: std::io::Error::other(e.to_string()),
    })?;
    let bound = std_l.local_addr().map_err(|reason| ServerError::Listen {
        addr: r.listen,
        reason,
    })?;
    let listener =
        tokio::net::TcpListener::from_std(std_l).map_err(|reason| ServerError::Listen {
            addr: r.listen,
            reason,
        })?;
    if let Some(m) = r.metrics {
        let ml = tokio::net::TcpListener::bind(m)
            .await
            .map_err(|reason| ServerError::Listen { addr: m, reason })?;
        tokio::spawn(metrics_loop(ml, r.service.clone()));
    }

    // The sweep of expired state, when an idle server's clock says it is due.
    {
        let svc = r.service.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(60)).await;
                svc.sweep_if_due();
            }
        });
    }

    // Renewal of the server's own certificate. Each completed check is counted
    // (`tlskit_acme_own_certificate_checks_total`): a watcher (or a test that moved the
    // clock) knows a check has run on the clock it set, without guessing a delay.
    {
        let own = own.clone();
        let provider = provider.clone();
        let (acme_dir, svc) = (r.acme_dir.clone(), r.service.clone());
        let extra = r.server_names.clone();
        let every = r.renewal_check;
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let now = i64::try_from(svc.clock.unix_secs()).unwrap_or(i64::MAX);
                if due(current_not, now) {
                    let (c, a, p, x) = (
                        svc.ca.clone(),
                        acme_dir.clone(),
                        provider.clone(),
                        extra.clone(),
                    );
                    match tokio::task::spawn_blocking(move || own_certificate(&c, &a, &x, &p, now))
                        .await
                    {
                        Ok(Ok(l)) => {
                            current_not = (l.not_before, l.not_after);
                            let mut served = own.0.write().unwrap_or_else(|p| p.into_inner());
                            if served.cert != l.key.cert {
                                svc.counters.own_renewals.fetch_add(1, Ordering::Relaxed);
                            }
                            *served = l.key;
                        }
                        Ok(Err(e)) => log::event(
                            Level::Error,
                            "acme_server_certificate_renewal_failed",
                            &[("reason", &e)],
                        ),
                        Err(_) => {}
                    }
                }
                svc.counters.own_checks.fetch_add(1, Ordering::Release);
            }
        });
    }

    log::event(
        Level::Info,
        "acme_server_listening",
        &[
            ("address", &bound),
            ("directory", &format!("https://{bound}/directory")),
        ],
    );
    ready(bound);
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(ServerError::Runtime)?;
    loop {
        let permit = tokio::select! {
            p = slots.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => break },
            _ = tokio::signal::ctrl_c() => break,
            _ = term.recv() => break,
        };
        let (tcp, peer) = tokio::select! {
            a = listener.accept() => match a {
                Ok(x) => x,
                Err(_) => { tokio::time::sleep(Duration::from_millis(50)).await; continue }
            },
            _ = tokio::signal::ctrl_c() => break,
            _ = term.recv() => break,
        };
        let _ = tlskit_tls::sock::tune(socket2::SockRef::from(&tcp));
        let acceptor = acceptor.clone();
        let svc = r.service.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let Ok(Ok(tls)) = tokio::time::timeout(HANDSHAKE, acceptor.accept(tcp)).await else {
                return;
            };
            let service = service_fn(move |req| {
                let svc = svc.clone();
                async move { Ok::<_, std::convert::Infallible>(svc.handle(req, peer).await) }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HANDSHAKE)
                .max_buf_size(64 * 1024)
                .serve_connection(TokioIo::new(tls), service);
            // An idle keep-alive connection ends after a while.
            let _ = tokio::time::timeout(Duration::from_secs(300), conn).await;
        });
    }
    log::event(Level::Info, "acme_server_stopped", &[("address", &bound)]);
    Ok(())
}

/// The metrics listener: `GET /metrics` in Prometheus text, anything else 404.
async fn metrics_loop(l: tokio::net::TcpListener, svc: Arc<Service>) {
    loop {
        let Ok((mut c, _)) = l.accept().await else {
            continue;
        };
        let svc = svc.clone();
        tokio::spawn(async move {
            let mut buf = [0u8; 1024];
            let Ok(Ok(n)) = tokio::time::timeout(Duration::from_secs(5), c.read(&mut buf)).await
            else {
                return;
            };
            let head = String::from_utf8_lossy(&buf[..n]);
            let resp = if head.starts_with("GET /metrics ") {
                let body = metrics_text(&svc);
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                )
            } else {
                "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".into()
            };
            let _ = c.write_all(resp.as_bytes()).await;
        });
    }
}

fn metrics_text(svc: &Service) -> String {
    let c = &svc.counters;
    let rows: [(&str, &str, u64); 11] = [
        (
            "tlskit_acme_requests_total",
            "Requests answered.",
            c.requests.load(Ordering::Relaxed),
        ),
        (
            "tlskit_acme_problems_total",
            "Requests answered with a problem document.",
            c.problems.load(Ordering::Relaxed),
        ),
        (
            "tlskit_acme_accounts_created_total",
            "Accounts created.",
            c.accounts.load(Ordering::Relaxed),
        ),
        (
            "tlskit_acme_orders_created_total",
            "Orders created.",
            c.orders.load(Ordering::Relaxed),
        ),
        (
            "tlskit_acme_validations_passed_total",
            "Challenges validated.",
            c.validations_ok.load(Ordering::Relaxed),
        ),
        (
            "tlskit_acme_validations_failed_total",
            "Challenges that failed validation.",
            c.validations_failed.load(Ordering::Relaxed),
        ),
        (
            "tlskit_acme_certificates_issued_total",
            "Certificates issued.",
            c.certificates.load(Ordering::Relaxed),
        ),
        (
            "tlskit_acme_revocations_total",
            "Certificates revoked.",
            c.revocations.load(Ordering::Relaxed),
        ),
        (
            "tlskit_acme_own_certificate_checks_total",
            "Checks whether the server's own certificate is due for renewal, completed.",
            c.own_checks.load(Ordering::Acquire),
        ),
        (
            "tlskit_acme_own_certificate_renewals_total",
            "Renewals of the server's own certificate since it started.",
            c.own_renewals.load(Ordering::Relaxed),
        ),
        (
            "tlskit_acme_state_sweeps_total",
            "Sweeps of expired orders, authorizations and certificate records, completed.",
            c.sweeps.load(Ordering::Acquire),
        ),
    ];
    let mut out = String::new();
    for (name, help, v) in rows {
        out.push_str(&format!(
            "# HELP {name} {help}\n# TYPE {name} counter\n{name} {v}\n"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serial(l: &Loaded) -> Vec<u8> {
        let der = l.key.cert.first().expect("leaf");
        let (_, x) = X509Certificate::from_der(der.as_ref()).expect("cert");
        x.raw_serial().to_vec()
    }

    #[test]
    fn own_certificate_is_reused_until_due_and_follows_the_names() {
        let t = tempfile::tempdir().expect("tempdir");
        let dir = t.path().join("ca");
        tlskit_pki::ca::init(&dir, &tlskit_pki::ca::InitOptions::new().days(3650))
            .expect("ca init");
        let ca = tlskit_pki::ca::Ca::open(&dir).expect("ca");
        let acme = t.path().join("acme");
        std::fs::create_dir(&acme).expect("acme dir");
        let p = rustls::crypto::aws_lc_rs::default_provider();
        let now = i64::try_from(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .expect("clock")
                .as_secs(),
        )
        .expect("now");
        let first = own_certificate(&ca, &acme, &[], &p, now).expect("issued");
        let mut names = first.names.clone();
        names.sort();
        assert_eq!(names, ["127.0.0.1", "localhost"]);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(acme.join("https.key"))
            .expect("key")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        // Not due: the stored one again.
        let again = own_certificate(&ca, &acme, &[], &p, now + 3600).expect("reused");
        assert_eq!(serial(&again), serial(&first));
        // Five of its seven days gone: due, a new one.
        let later = own_certificate(&ca, &acme, &[], &p, now + 5 * 86_400).expect("renewed");
        assert_ne!(serial(&later), serial(&first));
        // Another name asked for: a new one that carries it.
        let named =
            own_certificate(&ca, &acme, &["ca.example.test".into()], &p, now).expect("renamed");
        assert!(
            named.names.iter().any(|n| n == "ca.example.test"),
            "{:?}",
            named.names
        );
    }
}
