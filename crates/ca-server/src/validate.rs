//! Challenge validation: http-01 (RFC 8555 8.3) and tls-alpn-01 (RFC 8737). The
//! identifier is resolved (the system resolver: `localhost` is 127.0.0.1), then each
//! address is tried at the validation port with one overall deadline; what the peer
//! sends is read with a size bound. A failure comes back as the problem document the
//! challenge then carries.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use aws_lc_rs::digest;
use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper_util::rt::TokioIo;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use tokio::net::TcpStream;
use x509_parser::prelude::*;

use crate::problem::{Kind, Problem};
use crate::state::Identifier;

/// The whole validation of one challenge, every address included.
pub(crate) const DEADLINE: Duration = Duration::from_secs(10);
/// One connection attempt.
const CONNECT: Duration = Duration::from_secs(3);
/// Largest http-01 response body read (a key authorization is about 87 bytes).
const MAX_HTTP_BODY: usize = 8 * 1024;
/// The acmeIdentifier extension (RFC 8737 section 6.1).
const ACME_IDENTIFIER_OID: &str = "1.3.6.1.5.5.7.1.31";

/// Where validation connects, and how names are resolved.
#[derive(Debug, Clone)]
pub(crate) struct Ports {
    pub(crate) http: u16,
    pub(crate) tls: u16,
    /// A DNS server to resolve identifiers and read dns-01 records from; the system
    /// resolver (and no dns-01) when `None`.
    pub(crate) resolver: Option<SocketAddr>,
}

async fn resolve(
    ident: &Identifier,
    port: u16,
    resolver: Option<SocketAddr>,
) -> Result<Vec<SocketAddr>, Problem> {
    if let Ok(ip) = ident.value.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let name = ident.value.clone();
    if let Some(server) = resolver {
        let deadline = std::time::Instant::now() + CONNECT;
        let n = name.clone();
        let found =
            tokio::task::spawn_blocking(move || tlskit_dns::query_addrs(server, &n, deadline))
                .await
                .map_err(|_| crate::problem::internal("the resolving task failed"))?
                .map_err(|e| {
                    Problem::new(Kind::Dns, format!("cannot resolve {name} at {server}: {e}"))
                })?;
        if found.is_empty() {
            return Err(Problem::new(
                Kind::Dns,
                format!("{name} has no address at {server}"),
            ));
        }
        return Ok(found
            .into_iter()
            .map(|ip| SocketAddr::new(ip, port))
            .collect());
    }
    let found = tokio::time::timeout(CONNECT, tokio::net::lookup_host((name.as_str(), port)))
        .await
        .map_err(|_| Problem::new(Kind::Dns, format!("resolving {name} timed out")))?
        .map_err(|e| Problem::new(Kind::Dns, format!("cannot resolve {name}: {e}")))?;
    let addrs: Vec<SocketAddr> = found.collect();
    if addrs.is_empty() {
        return Err(Problem::new(Kind::Dns, format!("{name} has no address")));
    }
    Ok(addrs)
}

async fn connect(addrs: &[SocketAddr], what: &str) -> Result<TcpStream, Problem> {
    let mut last = String::new();
    for a in addrs {
        match tokio::time::timeout(CONNECT, TcpStream::connect(a)).await {
            Ok(Ok(s)) => return Ok(s),
            Ok(Err(e)) => last = format!("{a}: {e}"),
            Err(_) => last = format!("{a}: the connection timed out"),
        }
    }
    Err(Problem::new(
        Kind::Connection,
        format!("cannot connect to {what}: {last}"),
    ))
}

/// Validate http-01: GET `/.well-known/acme-challenge/TOKEN` must answer 200 with the key
/// authorization (surrounding whitespace allowed).
pub(crate) async fn http01(
    ident: &Identifier,
    ports: &Ports,
    token: &str,
    key_auth: &str,
) -> Result<(), Problem> {
    tokio::time::timeout(DEADLINE, http01_inner(ident, ports, token, key_auth))
        .await
        .unwrap_or_else(|_| {
            Err(Problem::new(
                Kind::Connection,
                format!(
                    "http-01 validation of {} did not finish within {} s",
                    ident.value,
                    DEADLINE.as_secs()
                ),
            ))
        })
}

async fn http01_inner(
    ident: &Identifier,
    ports: &Ports,
    token: &str,
    key_auth: &str,
) -> Result<(), Problem> {
    let port = ports.http;
    let addrs = resolve(ident, port, ports.resolver).await?;
    let stream = connect(&addrs, &format!("{} port {port}", ident.value)).await?;
    let conn_err = |e: hyper::Error| {
        Problem::new(
            Kind::Connection,
            format!("http-01 request to {} failed: {e}", ident.value),
        )
    };
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(conn_err)?;
    let driver = tokio::spawn(conn);
    let host = match ident.value.parse::<IpAddr>() {
        Ok(IpAddr::V6(v6)) => format!("[{v6}]"),
        _ => ident.value.clone(),
    };
    let host = if port == 80 {
        host
    } else {
        format!("{host}:{port}")
    };
    let req = http::Request::get(format!("/.well-known/acme-challenge/{token}"))
        .header(http::header::HOST, host)
        .header(http::header::USER_AGENT, "tlskit-ca-server")
        .body(Empty::<Bytes>::new())
        .map_err(|e| crate::problem::internal(format!("building the http-01 request: {e}")))?;
    let resp = sender.send_request(req).await.map_err(conn_err)?;
    let status = resp.status();
    let body = Limited::new(resp.into_body(), MAX_HTTP_BODY)
        .collect()
        .await
        .map_err(|_| {
            Problem::new(
                Kind::IncorrectResponse,
                format!(
                    "the http-01 answer from {} is larger than {MAX_HTTP_BODY} bytes or broken",
                    ident.value
                ),
            )
        })?
        .to_bytes();
    driver.abort();
    if status != http::StatusCode::OK {
        return Err(Problem::new(
            Kind::Unauthorized,
            format!(
                "the http-01 answer from {} has status {}, not 200",
                ident.value,
                status.as_u16()
            ),
        ));
    }
    let got = String::from_utf8_lossy(&body);
    if got.trim() != key_auth {
        return Err(Problem::new(
            Kind::Unauthorized,
            format!(
                "the http-01 answer from {} is not the key authorization of this challenge",
                ident.value
            ),
        ));
    }
    Ok(())
}

/// Accepts whatever certificate the peer presents (tls-alpn-01 checks it by hand below:
/// a self-signed validation certificate is the point), but still checks the handshake
/// signature with the provider, so the peer holds the certificate's key.
#[derive(Debug)]
struct AnyCert(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCert {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.check(message, cert, dss)
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.check(message, cert, dss)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

impl AnyCert {
    /// The handshake signature, checked by the provider's algorithms on the certificate's
    /// public key (rustls' own helper parses the certificate with webpki, which refuses
    /// the critical acmeIdentifier extension every validation certificate carries).
    fn check(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let bad = || rustls::Error::InvalidCertificate(rustls::CertificateError::BadSignature);
        let (_, x) = X509Certificate::from_der(cert.as_ref()).map_err(|_| bad())?;
        let key = &x.public_key().subject_public_key.data;
        let algs = self
            .0
            .signature_verification_algorithms
            .mapping
            .iter()
            .find(|(scheme, _)| *scheme == dss.scheme)
            .map(|(_, a)| *a)
            .ok_or_else(bad)?;
        if algs
            .iter()
            .any(|a| a.verify_signature(key, message, dss.signature()).is_ok())
        {
            Ok(HandshakeSignatureValid::assertion())
        } else {
            Err(bad())
        }
    }
}

/// The SNI of a tls-alpn-01 handshake: the DNS name, or an IP's reverse name (RFC 8738).
fn sni(ident: &Identifier) -> Result<ServerName<'static>, Problem> {
    let name = match ident.value.parse::<IpAddr>() {
        Ok(IpAddr::V4(v4)) => {
            let o = v4.octets();
            format!("{}.{}.{}.{}.in-addr.arpa", o[3], o[2], o[1], o[0])
        }
        Ok(IpAddr::V6(v6)) => {
            let mut s = String::new();
            for b in v6.octets().iter().rev() {
                s.push_str(&format!("{:x}.{:x}.", b & 0xf, b >> 4));
            }
            s.push_str("ip6.arpa");
            s
        }
        Err(_) => ident.value.clone(),
    };
    ServerName::try_from(name)
        .map_err(|_| crate::problem::malformed("the identifier is not a usable TLS server name"))
}

/// Validate tls-alpn-01: a handshake with ALPN `acme-tls/1` and the identifier as SNI
/// must present a certificate for exactly that identifier carrying a critical
/// acmeIdentifier extension with SHA-256 of the key authorization.
pub(crate) async fn tls_alpn01(
    ident: &Identifier,
    ports: &Ports,
    key_auth: &str,
) -> Result<(), Problem> {
    tokio::time::timeout(DEADLINE, tls_alpn01_inner(ident, ports, key_auth))
        .await
        .unwrap_or_else(|_| {
            Err(Problem::new(
                Kind::Connection,
                format!(
                    "tls-alpn-01 validation of {} did not finish within {} s",
                    ident.value,
                    DEADLINE.as_secs()
                ),
            ))
        })
}

async fn tls_alpn01_inner(
    ident: &Identifier,
    ports: &Ports,
    key_auth: &str,
) -> Result<(), Problem> {
    let port = ports.tls;
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut cfg = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| crate::problem::internal(format!("TLS client setup: {e}")))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCert(provider)))
        .with_no_client_auth();
    cfg.alpn_protocols = vec![b"acme-tls/1".to_vec()];
    let addrs = resolve(ident, port, ports.resolver).await?;
    let stream = connect(&addrs, &format!("{} port {port}", ident.value)).await?;
    let tls = tokio_rustls::TlsConnector::from(Arc::new(cfg))
        .connect(sni(ident)?, stream)
        .await
        .map_err(|e| {
            Problem::new(
                Kind::Tls,
                format!("the tls-alpn-01 handshake with {} failed: {e}", ident.value),
            )
        })?;
    let (_, conn) = tls.get_ref();
    if conn.alpn_protocol() != Some(b"acme-tls/1") {
        return Err(Problem::new(
            Kind::Tls,
            format!("{} did not negotiate ALPN acme-tls/1", ident.value),
        ));
    }
    let leaf = conn
        .peer_certificates()
        .and_then(|c| c.first())
        .ok_or_else(|| Problem::new(Kind::Tls, "the peer presented no certificate"))?;
    check_validation_cert(leaf.as_ref(), ident, key_auth)
}

/// Validate dns-01 (RFC 8555 8.4): a TXT record at `_acme-challenge.NAME` (a wildcard's
/// base name) holding base64url(SHA-256(key authorization)), asked of the resolver.
pub(crate) async fn dns01(
    ident: &Identifier,
    resolver: Option<SocketAddr>,
    key_auth: &str,
) -> Result<(), Problem> {
    let server = resolver.ok_or_else(|| {
        crate::problem::malformed("dns-01 is validated only with a configured resolver")
    })?;
    let want = crate::jws::b64url(digest::digest(&digest::SHA256, key_auth.as_bytes()).as_ref());
    let name = format!("_acme-challenge.{}.", ident.value);
    let deadline = std::time::Instant::now() + DEADLINE;
    let n = name.clone();
    let values = tokio::task::spawn_blocking(move || tlskit_dns::query_txt(server, &n, deadline))
        .await
        .map_err(|_| crate::problem::internal("the DNS task failed"))?
        .map_err(|e| Problem::new(Kind::Dns, format!("the TXT query for {name} failed: {e}")))?;
    if values.iter().any(|v| v == &want) {
        Ok(())
    } else {
        Err(Problem::new(
            Kind::Unauthorized,
            format!(
                "{name} has {} TXT record(s) at {server}, none with this challenge's digest",
                values.len()
            ),
        ))
    }
}

/// The checks RFC 8737 section 3 asks of the validation certificate.
pub(crate) fn check_validation_cert(
    der: &[u8],
    ident: &Identifier,
    key_auth: &str,
) -> Result<(), Problem> {
    let bad = |why: &str| {
        Problem::new(
            Kind::Unauthorized,
            format!("the tls-alpn-01 certificate of {} {why}", ident.value),
        )
    };
    let (_, cert) =
        X509Certificate::from_der(der).map_err(|_| bad("is not a parsable certificate"))?;
    let sans = cert
        .subject_alternative_name()
        .map_err(|_| bad("has a malformed subjectAltName"))?
        .ok_or_else(|| bad("has no subjectAltName"))?;
    let names = &sans.value.general_names;
    let want_ip = ident.value.parse::<IpAddr>().ok();
    let matches = match names.as_slice() {
        [GeneralName::DNSName(d)] => want_ip.is_none() && d.eq_ignore_ascii_case(&ident.value),
        [GeneralName::IPAddress(b)] => match (want_ip, b.len()) {
            (Some(IpAddr::V4(w)), 4) => w.octets().as_slice() == *b,
            (Some(IpAddr::V6(w)), 16) => w.octets().as_slice() == *b,
            _ => false,
        },
        _ => false,
    };
    if !matches {
        return Err(bad("does not name exactly this identifier"));
    }
    let digest = digest::digest(&digest::SHA256, key_auth.as_bytes());
    let mut want = vec![0x04, 0x20];
    want.extend_from_slice(digest.as_ref());
    let ext = cert
        .extensions()
        .iter()
        .find(|e| e.oid.to_id_string() == ACME_IDENTIFIER_OID)
        .ok_or_else(|| bad("has no acmeIdentifier extension"))?;
    if !ext.critical {
        return Err(bad("has an acmeIdentifier extension that is not critical"));
    }
    if ext.value != want.as_slice() {
        return Err(bad(
            "carries an acmeIdentifier that is not this challenge's key authorization digest",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alpn_cert(name: &str, key_auth: &str, critical: bool) -> Vec<u8> {
        let mut p = rcgen::CertificateParams::new(vec![name.to_string()]).expect("params");
        let d = digest::digest(&digest::SHA256, key_auth.as_bytes());
        let mut v = vec![0x04, 0x20];
        v.extend_from_slice(d.as_ref());
        let mut ext = rcgen::CustomExtension::from_oid_content(&[1, 3, 6, 1, 5, 5, 7, 1, 31], v);
        ext.set_criticality(critical);
        p.custom_extensions = vec![ext];
        let k = rcgen::KeyPair::generate().expect("key");
        p.self_signed(&k).expect("cert").der().to_vec()
    }

    #[test]
    fn validation_certificate_is_checked_as_rfc8737_asks() {
        let id = Identifier {
            kind: "dns".into(),
            value: "a.test".into(),
        };
        check_validation_cert(&alpn_cert("a.test", "tok.thumb", true), &id, "tok.thumb")
            .expect("valid");
        let e = check_validation_cert(&alpn_cert("a.test", "tok.thumb", false), &id, "tok.thumb")
            .expect_err("not critical");
        assert!(e.detail.contains("not critical"), "{}", e.detail);
        let e = check_validation_cert(&alpn_cert("a.test", "other", true), &id, "tok.thumb")
            .expect_err("digest");
        assert!(e.detail.contains("key authorization"), "{}", e.detail);
        let e = check_validation_cert(&alpn_cert("b.test", "tok.thumb", true), &id, "tok.thumb")
            .expect_err("name");
        assert!(e.detail.contains("exactly this identifier"), "{}", e.detail);
    }
}
