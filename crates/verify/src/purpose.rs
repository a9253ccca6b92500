//! [`Purpose`]: what a verification asks the end-entity certificate to be good for. Every
//! layer of the verifier speaks of it (the profile, the RFC 5280 validator, the cache).

use webpki::KeyUsage;

/// What the end-entity certificate must be good for (its extended key usage).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Purpose {
    /// TLS server authentication (id-kp-serverAuth, required if the EKU extension is present).
    Server,
    /// TLS client authentication (id-kp-clientAuth, required if the EKU extension is present).
    Client,
}

impl Purpose {
    pub(crate) fn usage(self) -> KeyUsage {
        match self {
            Self::Server => KeyUsage::server_auth(),
            Self::Client => KeyUsage::client_auth(),
        }
    }
    /// `"server"` or `"client"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Server => "server",
            Self::Client => "client",
        }
    }
}
