//! The types of the terminator's optional services, in every build: ACME's (feature
//! `acme`, crate `tlskit-acme`) and the fleet's (feature `fleet`, crate `tlskit-fleet`).
//! Without a feature its types are empty enums: a configuration cannot hold them
//! (`ServeConfig::acme` and `shared_state` are then always `None`), and the code that
//! would use them compiles to nothing. The functions over them are in `services`.

#[cfg(not(feature = "acme"))]
use std::sync::Arc;

#[cfg(feature = "acme")]
pub use tlskit_acme::AcmeSettings;
#[cfg(feature = "acme")]
pub(crate) use tlskit_acme::{Managed, RenewalOutcome, ServerAcme};

/// ACME settings: this build has no ACME (feature `acme`), so none can exist.
#[cfg(not(feature = "acme"))]
#[derive(Debug, Clone)]
pub enum AcmeSettings {}

/// The ACME-managed certificate: none in a build without ACME.
#[cfg(not(feature = "acme"))]
#[derive(Debug)]
pub(crate) enum Managed {}

#[cfg(not(feature = "acme"))]
impl Managed {
    pub(crate) fn current(&self) -> Option<Arc<rustls::sign::CertifiedKey>> {
        match *self {}
    }
    pub(crate) fn manages(&self, _: Option<&str>) -> bool {
        match *self {}
    }
    pub(crate) fn request_renewal(&self) -> RenewalRequest {
        match *self {}
    }
    pub(crate) fn next_attempt(&self) -> Option<u64> {
        match *self {}
    }
}

/// A renewal asked for: never made in a build without ACME (no `Managed` exists to ask).
#[cfg(not(feature = "acme"))]
#[derive(Debug)]
pub(crate) struct RenewalRequest;

#[cfg(not(feature = "acme"))]
impl RenewalRequest {
    pub(crate) async fn outcome(self) -> Option<RenewalOutcome> {
        None
    }
}

/// What a renewal came to (`tlskit_acme::RenewalOutcome`'s shape), for the code that
/// reads it to compile; never made without ACME.
#[cfg(not(feature = "acme"))]
#[derive(Debug)]
#[allow(dead_code)]
pub(crate) enum RenewalOutcome {
    Served { serial: String, not_after: u64 },
    Failed { reason: String },
}

/// What `serve` holds for ACME: nothing in a build without ACME.
#[cfg(not(feature = "acme"))]
#[derive(Debug)]
pub(crate) enum ServerAcme {}

#[cfg(feature = "fleet")]
pub use tlskit_fleet::SharedSettings;
#[cfg(feature = "fleet")]
pub(crate) use tlskit_fleet::SharedTickets;

/// The fleet's shared-state settings: this build has no fleet support (feature
/// `fleet`), so none can exist.
#[cfg(not(feature = "fleet"))]
#[derive(Debug, Clone)]
pub enum SharedSettings {}

/// The fleet's ticket keys: none in a build without fleet support.
#[cfg(not(feature = "fleet"))]
#[derive(Debug)]
pub(crate) enum SharedTickets {}

#[cfg(not(feature = "fleet"))]
impl SharedTickets {
    pub(crate) fn up(&self) -> bool {
        match *self {}
    }
    pub(crate) fn last_sync(&self) -> Option<u64> {
        match *self {}
    }
    pub(crate) fn key_from_fleet(&self) -> bool {
        match *self {}
    }
    pub(crate) fn current_key(&self) -> (u32, u64) {
        match *self {}
    }
}

#[cfg(not(feature = "fleet"))]
impl rustls::server::ProducesTickets for SharedTickets {
    fn enabled(&self) -> bool {
        match *self {}
    }
    fn lifetime(&self) -> u32 {
        match *self {}
    }
    fn encrypt(&self, _: &[u8]) -> Option<Vec<u8>> {
        match *self {}
    }
    fn decrypt(&self, _: &[u8]) -> Option<Vec<u8>> {
        match *self {}
    }
}
