//! RFC 8555 problem documents (section 6.7, RFC 7807 bodies): every refusal the server
//! sends is one of these, with a detail sentence that says what was wrong.

use serde_json::{json, Value};

/// The signature algorithms accepted for account keys (badSignatureAlgorithm lists them).
pub(crate) const ALGORITHMS: [&str; 4] = ["ES256", "ES384", "RS256", "EdDSA"];

/// Text from a peer, escaped and cut for messages and logs.
pub(crate) fn show(s: &str) -> String {
    let cut: String = s.chars().take(200).collect();
    tlskit_x509::text::escape(&cut).into_owned()
}

/// The error types this server uses (`urn:ietf:params:acme:error:` + the name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    AccountDoesNotExist,
    BadCsr,
    BadNonce,
    BadRevocationReason,
    BadSignatureAlgorithm,
    ExternalAccountRequired,
    InvalidProfile,
    Malformed,
    OrderNotReady,
    RateLimited,
    RejectedIdentifier,
    ServerInternal,
    Unauthorized,
    UnsupportedIdentifier,
    AlreadyRevoked,
    Connection,
    IncorrectResponse,
    Tls,
    Dns,
    NotFound,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::AccountDoesNotExist => "accountDoesNotExist",
            Kind::BadCsr => "badCSR",
            Kind::BadNonce => "badNonce",
            Kind::BadRevocationReason => "badRevocationReason",
            Kind::BadSignatureAlgorithm => "badSignatureAlgorithm",
            Kind::ExternalAccountRequired => "externalAccountRequired",
            Kind::InvalidProfile => "invalidProfile",
            Kind::Malformed | Kind::NotFound => "malformed",
            Kind::OrderNotReady => "orderNotReady",
            Kind::RateLimited => "rateLimited",
            Kind::RejectedIdentifier => "rejectedIdentifier",
            Kind::ServerInternal => "serverInternal",
            Kind::Unauthorized => "unauthorized",
            Kind::UnsupportedIdentifier => "unsupportedIdentifier",
            Kind::AlreadyRevoked => "alreadyRevoked",
            Kind::Connection => "connection",
            Kind::IncorrectResponse => "incorrectResponse",
            Kind::Tls => "tls",
            Kind::Dns => "dns",
        }
    }

    fn status(self) -> u16 {
        match self {
            Kind::Unauthorized | Kind::OrderNotReady => 403,
            Kind::NotFound => 404,
            Kind::RateLimited => 429,
            Kind::ServerInternal => 500,
            _ => 400,
        }
    }
}

/// One problem document.
#[derive(Debug, Clone)]
pub(crate) struct Problem {
    pub(crate) kind: Kind,
    pub(crate) detail: String,
    /// An HTTP status other than the type's usual one (413 for an oversized body).
    pub(crate) status: Option<u16>,
    /// badSignatureAlgorithm lists what is accepted.
    pub(crate) algorithms: bool,
}

impl Problem {
    pub(crate) fn new(kind: Kind, detail: impl Into<String>) -> Self {
        Problem {
            kind,
            detail: detail.into(),
            status: None,
            algorithms: kind == Kind::BadSignatureAlgorithm,
        }
    }

    pub(crate) fn with_status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }

    pub(crate) fn status(&self) -> u16 {
        self.status.unwrap_or(self.kind.status())
    }

    pub(crate) fn kind_name(&self) -> &'static str {
        self.kind.name()
    }

    pub(crate) fn to_json(&self) -> Value {
        let mut v = json!({
            "type": format!("urn:ietf:params:acme:error:{}", self.kind.name()),
            "detail": self.detail,
            "status": self.status(),
        });
        if self.algorithms {
            v["algorithms"] = json!(ALGORITHMS);
        }
        v
    }
}

pub(crate) fn malformed(detail: impl Into<String>) -> Problem {
    Problem::new(Kind::Malformed, detail)
}

pub(crate) fn unauthorized(detail: impl Into<String>) -> Problem {
    Problem::new(Kind::Unauthorized, detail)
}

pub(crate) fn not_found(what: &str) -> Problem {
    Problem::new(Kind::NotFound, format!("there is no {what} at this URL"))
}

pub(crate) fn internal(detail: impl Into<String>) -> Problem {
    Problem::new(Kind::ServerInternal, detail)
}
