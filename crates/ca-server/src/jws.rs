//! JWS (RFC 7515, flattened JSON serialization as RFC 8555 section 6.2 asks) and JWK
//! (RFC 7517/7518) for account keys: ES256, ES384, RS256 and EdDSA (Ed25519). Signatures
//! are checked by aws-lc-rs; the JWK thumbprint (RFC 7638) names an account and makes
//! key authorizations. External account binding MACs (HS256/384/512) also by aws-lc-rs.

use aws_lc_rs::{digest, hmac, signature};
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine as _;
use serde::Deserialize;
use serde_json::Value;

use crate::problem::{malformed, Kind, Problem};

pub(crate) use crate::problem::ALGORITHMS;

/// A flattened JWS as sent.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Flattened {
    pub(crate) protected: String,
    pub(crate) payload: String,
    pub(crate) signature: String,
}

/// The protected header fields ACME uses.
#[derive(Debug, Deserialize)]
pub(crate) struct Protected {
    pub(crate) alg: String,
    #[serde(default)]
    pub(crate) nonce: Option<String>,
    #[serde(default)]
    pub(crate) url: Option<String>,
    #[serde(default)]
    pub(crate) jwk: Option<Value>,
    #[serde(default)]
    pub(crate) kid: Option<String>,
}

/// A JWS whose header was parsed, not yet verified.
#[derive(Debug)]
pub(crate) struct Parsed {
    pub(crate) header: Protected,
    /// `protected.payload`, what the signature covers.
    signing_input: Vec<u8>,
    signature: Vec<u8>,
    /// The payload decoded (empty for POST-as-GET).
    pub(crate) payload: Vec<u8>,
}

fn b64(field: &str, s: &str) -> Result<Vec<u8>, Problem> {
    B64.decode(s)
        .map_err(|_| malformed(format!("the JWS {field} is not base64url without padding")))
}

/// Parse a flattened JWS body and its protected header.
pub(crate) fn parse(body: &[u8]) -> Result<Parsed, Problem> {
    let f: Flattened = serde_json::from_slice(body).map_err(|_| {
        malformed("the request body is not a flattened JWS (protected, payload, signature)")
    })?;
    let header_bytes = b64("protected header", &f.protected)?;
    let header: Protected = serde_json::from_slice(&header_bytes)
        .map_err(|_| malformed("the JWS protected header is not a JSON object with alg"))?;
    if !ALGORITHMS.contains(&header.alg.as_str()) {
        return Err(Problem::new(
            Kind::BadSignatureAlgorithm,
            format!(
                "the JWS algorithm {:?} is not accepted (ES256, ES384, RS256, EdDSA are)",
                crate::problem::show(&header.alg)
            ),
        ));
    }
    let payload = b64("payload", &f.payload)?;
    let signature = b64("signature", &f.signature)?;
    let mut signing_input = Vec::with_capacity(f.protected.len() + f.payload.len() + 1);
    signing_input.extend_from_slice(f.protected.as_bytes());
    signing_input.push(b'.');
    signing_input.extend_from_slice(f.payload.as_bytes());
    Ok(Parsed {
        header,
        signing_input,
        signature,
        payload,
    })
}

/// A public account key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Jwk {
    P256 { x: Vec<u8>, y: Vec<u8> },
    P384 { x: Vec<u8>, y: Vec<u8> },
    Rsa { n: Vec<u8>, e: Vec<u8> },
    Ed25519 { x: Vec<u8> },
}

fn field<'a>(v: &'a Value, name: &str) -> Result<&'a str, Problem> {
    v.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| malformed(format!("the JWK has no {name:?} string")))
}

fn coord(v: &Value, name: &str, len: usize) -> Result<Vec<u8>, Problem> {
    let b = b64(&format!("JWK {name}"), field(v, name)?)?;
    if b.len() != len {
        return Err(malformed(format!(
            "the JWK {name} is {} bytes; this curve needs {len}",
            b.len()
        )));
    }
    Ok(b)
}

impl Jwk {
    /// Parse a public JWK (private members are refused: a client that sends its private
    /// key has leaked it).
    pub(crate) fn from_json(v: &Value) -> Result<Self, Problem> {
        if v.get("d").is_some() {
            return Err(malformed(
                "the JWK holds a private key (member d); send only the public key",
            ));
        }
        match field(v, "kty")? {
            "EC" => match field(v, "crv")? {
                "P-256" => Ok(Jwk::P256 {
                    x: coord(v, "x", 32)?,
                    y: coord(v, "y", 32)?,
                }),
                "P-384" => Ok(Jwk::P384 {
                    x: coord(v, "x", 48)?,
                    y: coord(v, "y", 48)?,
                }),
                other => Err(Problem::new(
                    Kind::BadSignatureAlgorithm,
                    format!(
                        "the EC curve {:?} is not accepted (P-256, P-384 are)",
                        crate::problem::show(other)
                    ),
                )),
            },
            "RSA" => {
                let n = b64("JWK n", field(v, "n")?)?;
                let e = b64("JWK e", field(v, "e")?)?;
                let bits = n.iter().skip_while(|b| **b == 0).count() * 8;
                if !(2048..=8192).contains(&bits) {
                    return Err(Problem::new(
                        Kind::BadSignatureAlgorithm,
                        format!(
                            "an RSA key of about {bits} bits is not accepted (2048 to 8192 are)"
                        ),
                    ));
                }
                Ok(Jwk::Rsa { n, e })
            }
            "OKP" => match field(v, "crv")? {
                "Ed25519" => Ok(Jwk::Ed25519 {
                    x: coord(v, "x", 32)?,
                }),
                other => Err(Problem::new(
                    Kind::BadSignatureAlgorithm,
                    format!(
                        "the OKP curve {:?} is not accepted (Ed25519 is)",
                        crate::problem::show(other)
                    ),
                )),
            },
            other => Err(Problem::new(
                Kind::BadSignatureAlgorithm,
                format!(
                    "the key type {:?} is not accepted (EC, RSA, OKP are)",
                    crate::problem::show(other)
                ),
            )),
        }
    }

    /// The RFC 7638 members in lexicographic order, as compact JSON (base64url values
    /// need no escaping).
    pub(crate) fn canonical(&self) -> String {
        match self {
            Jwk::P256 { x, y } => format!(
                r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#,
                B64.encode(x),
                B64.encode(y)
            ),
            Jwk::P384 { x, y } => format!(
                r#"{{"crv":"P-384","kty":"EC","x":"{}","y":"{}"}}"#,
                B64.encode(x),
                B64.encode(y)
            ),
            Jwk::Rsa { n, e } => format!(
                r#"{{"e":"{}","kty":"RSA","n":"{}"}}"#,
                B64.encode(e),
                B64.encode(n)
            ),
            Jwk::Ed25519 { x } => {
                format!(r#"{{"crv":"Ed25519","kty":"OKP","x":"{}"}}"#, B64.encode(x))
            }
        }
    }

    /// The RFC 7638 thumbprint (SHA-256), base64url.
    pub(crate) fn thumbprint(&self) -> String {
        B64.encode(digest::digest(&digest::SHA256, self.canonical().as_bytes()))
    }

    /// The public key as JSON (what an account stores).
    pub(crate) fn to_json(&self) -> Value {
        serde_json::from_str(&self.canonical()).unwrap_or(Value::Null)
    }

    fn alg_matches(&self, alg: &str) -> bool {
        matches!(
            (self, alg),
            (Jwk::P256 { .. }, "ES256")
                | (Jwk::P384 { .. }, "ES384")
                | (Jwk::Rsa { .. }, "RS256")
                | (Jwk::Ed25519 { .. }, "EdDSA")
        )
    }

    /// Check a JWS signature made with this key.
    pub(crate) fn verify(&self, jws: &Parsed) -> Result<(), Problem> {
        let alg = jws.header.alg.as_str();
        if !self.alg_matches(alg) {
            return Err(Problem::new(
                Kind::BadSignatureAlgorithm,
                format!("the JWS algorithm {alg} does not fit the account key's type"),
            ));
        }
        let msg = &jws.signing_input;
        let sig = &jws.signature;
        let ec_point = |x: &[u8], y: &[u8]| {
            let mut p = Vec::with_capacity(1 + x.len() + y.len());
            p.push(4);
            p.extend_from_slice(x);
            p.extend_from_slice(y);
            p
        };
        let ok = match self {
            Jwk::P256 { x, y } => signature::UnparsedPublicKey::new(
                &signature::ECDSA_P256_SHA256_FIXED,
                ec_point(x, y),
            )
            .verify(msg, sig),
            Jwk::P384 { x, y } => signature::UnparsedPublicKey::new(
                &signature::ECDSA_P384_SHA384_FIXED,
                ec_point(x, y),
            )
            .verify(msg, sig),
            Jwk::Rsa { n, e } => signature::RsaPublicKeyComponents { n, e }.verify(
                &signature::RSA_PKCS1_2048_8192_SHA256,
                msg,
                sig,
            ),
            Jwk::Ed25519 { x } => {
                signature::UnparsedPublicKey::new(&signature::ED25519, x).verify(msg, sig)
            }
        };
        ok.map_err(|_| malformed("the JWS signature does not verify with the account key"))
    }
}

/// Verify an external account binding (RFC 8555 7.3.4): a JWS MACed with the EAB key
/// named by `kid`, over the account's JWK, for `url`. Returns the key id; `key_for`
/// looks a key id up (None: unknown).
pub(crate) fn verify_eab(
    eab: &Value,
    account_jwk: &Jwk,
    url: &str,
    key_for: impl Fn(&str) -> Option<Vec<u8>>,
) -> Result<String, Problem> {
    let f: Flattened = serde_json::from_value(eab.clone())
        .map_err(|_| malformed("externalAccountBinding is not a flattened JWS"))?;
    let header: Value = serde_json::from_slice(&b64("EAB protected header", &f.protected)?)
        .map_err(|_| malformed("the EAB protected header is not JSON"))?;
    let alg = match header.get("alg").and_then(Value::as_str) {
        Some("HS256") => hmac::HMAC_SHA256,
        Some("HS384") => hmac::HMAC_SHA384,
        Some("HS512") => hmac::HMAC_SHA512,
        _ => {
            return Err(Problem::new(
                Kind::BadSignatureAlgorithm,
                "the EAB algorithm must be HS256, HS384 or HS512",
            ))
        }
    };
    if header.get("nonce").is_some() {
        return Err(malformed("the EAB protected header must not carry a nonce"));
    }
    if header.get("url").and_then(Value::as_str) != Some(url) {
        return Err(unauthorized_eab("its url is not this newAccount URL"));
    }
    let kid = header
        .get("kid")
        .and_then(Value::as_str)
        .ok_or_else(|| malformed("the EAB protected header has no kid"))?;
    let key = key_for(kid).ok_or_else(|| unauthorized_eab("its key id is not enrolled"))?;
    let payload: Value = serde_json::from_slice(&b64("EAB payload", &f.payload)?)
        .map_err(|_| malformed("the EAB payload is not a JWK"))?;
    if Jwk::from_json(&payload)? != *account_jwk {
        return Err(unauthorized_eab("it binds a key other than this account's"));
    }
    let mac = b64("EAB signature", &f.signature)?;
    let msg = format!("{}.{}", f.protected, f.payload);
    hmac::verify(&hmac::Key::new(alg, &key), msg.as_bytes(), &mac)
        .map_err(|_| unauthorized_eab("its MAC does not verify"))?;
    Ok(kid.to_string())
}

fn unauthorized_eab(why: &str) -> Problem {
    Problem::new(
        Kind::Unauthorized,
        format!("the external account binding is refused: {why}"),
    )
}

/// base64url without padding (ACME's encoding everywhere).
pub(crate) fn b64url(bytes: &[u8]) -> String {
    B64.encode(bytes)
}

/// Decode base64url without padding (None when malformed).
pub(crate) fn from_b64url(s: &str) -> Option<Vec<u8>> {
    B64.decode(s).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_lc_rs::rand::SystemRandom;
    use aws_lc_rs::signature::{EcdsaKeyPair, Ed25519KeyPair, KeyPair as _};

    fn jws(header: Value, payload: &[u8], sign: impl Fn(&[u8]) -> Vec<u8>) -> Vec<u8> {
        let p = B64.encode(header.to_string());
        let pl = B64.encode(payload);
        let sig = sign(format!("{p}.{pl}").as_bytes());
        serde_json::json!({"protected": p, "payload": pl, "signature": B64.encode(sig)})
            .to_string()
            .into_bytes()
    }

    #[test]
    fn es256_and_eddsa_verify_and_tampering_does_not() {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .expect("key");
        let kp =
            EcdsaKeyPair::from_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref())
                .expect("key");
        let pt = kp.public_key().as_ref();
        let jwk = serde_json::json!({"kty":"EC","crv":"P-256","x":B64.encode(&pt[1..33]),"y":B64.encode(&pt[33..])});
        let body = jws(
            serde_json::json!({"alg":"ES256","jwk":jwk,"nonce":"n","url":"u"}),
            b"{}",
            |m| kp.sign(&rng, m).expect("sign").as_ref().to_vec(),
        );
        let parsed = parse(&body).expect("parse");
        let key = Jwk::from_json(parsed.header.jwk.as_ref().expect("jwk")).expect("jwk");
        key.verify(&parsed).expect("verifies");
        assert_eq!(parsed.payload, b"{}");
        // The same header with another payload: the signature no longer verifies.
        let mut v: Value = serde_json::from_slice(&body).expect("json");
        v["payload"] = Value::String(B64.encode(b"{\"x\":1}"));
        let tampered = parse(v.to_string().as_bytes()).expect("parse");
        let e = key.verify(&tampered).expect_err("tampered");
        assert_eq!(e.kind, Kind::Malformed);

        let ed = Ed25519KeyPair::generate().expect("key");
        let jwk = serde_json::json!({"kty":"OKP","crv":"Ed25519","x":B64.encode(ed.public_key().as_ref())});
        let body = jws(serde_json::json!({"alg":"EdDSA","jwk":jwk}), b"", |m| {
            ed.sign(m).as_ref().to_vec()
        });
        let parsed = parse(&body).expect("parse");
        let k = Jwk::from_json(parsed.header.jwk.as_ref().expect("jwk")).expect("jwk");
        k.verify(&parsed).expect("verifies");
        // The alg of another key type is refused as such.
        let wrong = jws(serde_json::json!({"alg":"ES256","jwk":jwk}), b"", |m| {
            ed.sign(m).as_ref().to_vec()
        });
        let e = k
            .verify(&parse(&wrong).expect("parse"))
            .expect_err("mismatch");
        assert_eq!(e.kind, Kind::BadSignatureAlgorithm);
    }

    #[test]
    fn unknown_algorithms_and_private_keys_are_refused() {
        let body = jws(serde_json::json!({"alg":"HS256"}), b"", |_| vec![1]);
        assert_eq!(
            parse(&body).expect_err("hs256").kind,
            Kind::BadSignatureAlgorithm
        );
        let body = jws(serde_json::json!({"alg":"none"}), b"", |_| vec![]);
        assert_eq!(
            parse(&body).expect_err("none").kind,
            Kind::BadSignatureAlgorithm
        );
        let e = Jwk::from_json(&serde_json::json!({"kty":"OKP","crv":"Ed25519","x":"AA","d":"AA"}))
            .expect_err("private");
        assert!(e.detail.contains("private key"), "{}", e.detail);
    }

    #[test]
    fn thumbprint_matches_rfc7638_example() {
        // RFC 7638 section 3.1.
        let v = serde_json::json!({"kty":"RSA","e":"AQAB","alg":"RS256","kid":"2011-04-29",
            "n":"0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw"});
        let k = Jwk::from_json(&v).expect("rsa");
        assert_eq!(
            k.thumbprint(),
            "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"
        );
    }

    #[test]
    fn eab_mac_is_checked() {
        let ed = Ed25519KeyPair::generate().expect("key");
        let jwk = Jwk::Ed25519 {
            x: ed.public_key().as_ref().to_vec(),
        };
        let key = b"0123456789abcdef0123456789abcdef".to_vec();
        let make = |k: &[u8], url: &str| {
            let p = B64.encode(serde_json::json!({"alg":"HS256","kid":"m1","url":url}).to_string());
            let pl = B64.encode(jwk.canonical());
            let tag = hmac::sign(
                &hmac::Key::new(hmac::HMAC_SHA256, k),
                format!("{p}.{pl}").as_bytes(),
            );
            serde_json::json!({"protected":p,"payload":pl,"signature":B64.encode(tag.as_ref())})
        };
        let lookup = |kid: &str| (kid == "m1").then(|| key.clone());
        assert_eq!(
            verify_eab(&make(&key, "U"), &jwk, "U", lookup).expect("valid"),
            "m1"
        );
        let e = verify_eab(
            &make(b"another key entirely........", "U"),
            &jwk,
            "U",
            lookup,
        )
        .expect_err("wrong key");
        assert_eq!(e.kind, Kind::Unauthorized);
        assert!(verify_eab(&make(&key, "V"), &jwk, "U", lookup).is_err());
    }
}
